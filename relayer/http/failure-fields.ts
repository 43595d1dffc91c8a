import type { Middleware } from "koa";
import { ROUTES } from "./paths.js";

/**
 * What every failure of a route says besides the error (docs/api.md 4.3, 4.5, 7): spends are not settled, an
 * access fee paid out of a note is both a spend and an authorization, and a tab's opening is a spend.
 */
const FAILURE_FIELDS: Record<string, Record<string, false>> = {
  [ROUTES.settle]: { settled: false },
  [ROUTES.settleX402]: { settled: false },
  [ROUTES.settleProof]: { settled: false },
  [ROUTES.settleX402Proof]: { settled: false },
  [ROUTES.withdraw]: { settled: false },
  [ROUTES.x402Pay]: { settled: false },
  [ROUTES.authorize]: { authorized: false },
  [ROUTES.accessFeeProof]: { settled: false, authorized: false },
  [ROUTES.openTab]: { settled: false, opened: false },
};

/**
 * Puts the route's failure fields in ctx.state.failureFields before anything can fail, so that a refused body,
 * a rate limit or a shutdown answer on a settle route says `settled: false` too.
 */
export function failureFieldsByRoute(): Middleware {
  return async (ctx, next) => {
    const fields = ctx.method === "POST" ? FAILURE_FIELDS[ctx.path] : undefined;
    if (fields !== undefined) ctx.state.failureFields = fields;
    return next();
  };
}

/** Whether a POST to `path` spends a note (its failures say `settled: false`). */
export function isSpendRoute(path: string): boolean {
  return FAILURE_FIELDS[path]?.settled === false;
}

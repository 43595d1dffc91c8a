import type { Middleware } from "koa";
import type { Logger } from "pino";
import { RelayerError } from "../errors.js";
import { describeCause } from "../ops/upstream-cause.js";

/**
 * When a 503 whose error names no time of its own (an indexer, chain or database fault) can be retried: every 503
 * tells the client when to come back (docs/relayer.md, "Errors").
 */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/**
 * The one place errors become responses: a RelayerError keeps its code, status and message; anything else is
 * logged (without the request body, which may hold note secrets) and answered as INTERNAL. Every 503 carries Retry-After. Fields in
 * ctx.state.failureFields (failure-fields.ts: `settled: false` on settle routes) are added to every failure.
 */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new RelayerError("NOT_FOUND", `No route ${ctx.method} ${ctx.path}. GET /api/facilitator/supported lists the endpoints.`);
      }
      // The router's allowedMethods answers another method of a known route with 405, and a method it does not
      // know at all with 501, both without a body.
      if ((ctx.status === 405 || ctx.status === 501) && ctx.body === undefined) {
        const allowed = ctx.response.get("Allow");
        throw new RelayerError("NOT_FOUND", `${ctx.path} does not answer ${ctx.method}${allowed ? `; it answers ${allowed}` : ""}.`, {}, 405);
      }
    } catch (error) {
      const known =
        error instanceof RelayerError ? error : new RelayerError("INTERNAL", "Internal error; nothing was reported spent. Retry, or check the note with verify.");
      if (!(error instanceof RelayerError)) logger.error({ err: describe(error), route: ctx.path }, "request failed");
      else if (error.cause !== undefined) logger.warn({ code: known.code, route: ctx.path, cause: describeCause(error.cause) }, "upstream failure");
      ctx.status = known.status;
      const retryAfter = known.retryAfterSeconds ?? (known.status === 503 ? UNAVAILABLE_RETRY_AFTER_SECONDS : undefined);
      if (retryAfter !== undefined) ctx.set("Retry-After", String(retryAfter));
      ctx.body = { ...(ctx.state.failureFields ?? {}), error: known.message, code: known.code, ...known.extra };
    }
  };
}

/** Error name and message only: stacks and causes can carry request data. */
function describe(error: unknown): { name: string; message: string } {
  return error instanceof Error ? { name: error.name, message: error.message } : { name: "unknown", message: String(error) };
}

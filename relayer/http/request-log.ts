import type { Middleware } from "koa";
import type { Logger } from "pino";

/**
 * Logs one line per request with what the operator needs and nothing that identifies the caller: no IP, user
 * agent, cookies or body (docs/design.md, "Privacy of the relayer's logs"). Koa's own ctx.ip is never read. A
 * refused request carries its error code: the `code` of an error body, or the `reason` of a verify answer that
 * says no.
 */
export function requestLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      logger.info(
        { method: ctx.method, route: ctx.path, status: ctx.status, code: refusalCode(ctx.body), ms: Math.round(performance.now() - started) },
        "request",
      );
    }
  };
}

function refusalCode(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const { code, valid, reason } = body as Record<string, unknown>;
  if (typeof code === "string") return code;
  return valid === false && typeof reason === "string" ? reason : undefined;
}

/** Drops the identifying headers before any handler can read them. */
export function stripClientIdentity(): Middleware {
  return async (ctx, next) => {
    for (const header of ["x-forwarded-for", "x-real-ip", "forwarded", "user-agent", "cookie"]) {
      delete ctx.req.headers[header];
    }
    return next();
  };
}

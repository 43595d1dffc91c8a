import type { Middleware } from "koa";
import type { Logger } from "pino";

/**
 * Logs one line per request with what the operator needs and nothing that identifies the caller: no IP, user
 * agent, cookies or body (spec 5.5). Koa's own ctx.ip is never read.
 */
export function requestLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      logger.info(
        { method: ctx.method, route: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) },
        "request",
      );
    }
  };
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

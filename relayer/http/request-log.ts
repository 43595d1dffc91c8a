import type { Middleware } from "koa";
import type { Logger } from "pino";

/**
 * Logs one line per request with what the operator needs and nothing that identifies the caller: no IP, user
 * agent, cookies or body (docs/design.md, "Privacy of the relayer's logs"). Koa's own ctx.ip is never read. A
 * refused request carries its error code: the `code` of an error body, or the `invalidReason`/`errorReason` of an
 * x402 verify or settle answer.
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
  const { code, invalidReason, errorReason } = body as Record<string, unknown>;
  const found = [code, invalidReason, errorReason].find((value) => typeof value === "string");
  return found as string | undefined;
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

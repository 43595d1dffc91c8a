import type { Middleware } from "koa";
import type { Logger } from "pino";
import { toWireJson, type ErrorBody } from "../api.js";
import { IndexerError } from "../errors.js";

/**
 * The one place errors become responses: an IndexerError keeps its code, status and message; anything else is
 * logged and answered as INTERNAL without its details.
 */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new IndexerError("ROUTE_NOT_FOUND", `no route ${ctx.method} ${ctx.path}`);
      }
    } catch (error) {
      if (!(error instanceof IndexerError)) logger.error({ err: error, method: ctx.method }, "request failed");
      const known = error instanceof IndexerError ? error : new IndexerError("INTERNAL", "internal error");
      // A client with a wrong INDEXER_TOKEN is an operator's mistake: say so where the operator looks.
      if (known.code === "UNAUTHORIZED") logger.warn({ method: ctx.method, route: ctx.path, code: known.code }, "request refused: bearer token");
      const body: ErrorBody = { error: { code: known.code, message: known.message } };
      ctx.status = known.status;
      ctx.type = "application/json";
      ctx.body = toWireJson(body);
    }
  };
}

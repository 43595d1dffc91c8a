import Koa from "koa";
import type { Logger } from "pino";
import { errorHandler } from "./error-handler.js";
import { failureFieldsByRoute } from "./failure-fields.js";
import type { InFlightRequests } from "./in-flight.js";
import { jsonBody } from "./json-body.js";
import type { RateLimiter } from "./rate-limit.js";
import { requestLog, stripClientIdentity } from "./request-log.js";
import { facilitatorRouter, type RouteDeps } from "./routes.js";

export interface AppDeps extends RouteDeps {
  logger: Logger;
  rateLimiter: RateLimiter;
  /** Lets a shutdown refuse new requests and wait for these (relayer/main.ts). */
  inFlight: InFlightRequests;
}

/** The facilitator's HTTP API (docs/relayer.md). */
export function createRelayerApp(deps: AppDeps): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(stripClientIdentity());
  app.use(requestLog(deps.logger));
  app.use(errorHandler(deps.logger));
  app.use(failureFieldsByRoute());
  app.use(deps.inFlight.middleware());
  app.use(deps.rateLimiter.globalLimit());
  app.use(jsonBody());
  app.use(deps.rateLimiter.perNoteLimit());
  const router = facilitatorRouter(deps);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

import Koa from "koa";
import type { Logger } from "pino";
import { metricsRoute } from "../../lib/metrics-http.js";
import type { RelayerMetrics } from "../ops/metrics.js";
import type { Readiness } from "../ops/readiness.js";
import type { RelayerStore } from "../store/relayer-store.js";
import { errorHandler } from "./error-handler.js";
import { failureFieldsByRoute } from "./failure-fields.js";
import type { InFlightRequests } from "./in-flight.js";
import { jsonBody } from "./json-body.js";
import { healthRoutes, requestMetrics, spendAdmission } from "./operations.js";
import type { RateLimiter } from "./rate-limit.js";
import { requestLog, stripClientIdentity } from "./request-log.js";
import { facilitatorRouter, type RouteDeps } from "./routes.js";
import { sellerRouter, type SellerRouteDeps } from "../seller/seller-routes.js";

export interface AppDeps extends RouteDeps {
  logger: Logger;
  rateLimiter: RateLimiter;
  /** Lets a shutdown refuse new requests and wait for these (relayer/main.ts). */
  inFlight: InFlightRequests;
  readiness: Readiness;
  metrics: RelayerMetrics;
  /** Runs before each scrape: the gauges read from the chain and the database. */
  refreshMetrics: () => Promise<void>;
  /** Serves GET /metrics on this port to bearers of the token; absent: not here (a port of its own, or none). */
  metricsToken?: string;
  store: RelayerStore;
  /** The seller-side routes' x402 facilitator (docs/api.md 4.9). */
  seller: Omit<SellerRouteDeps, "readiness">;
}

/** The facilitator's HTTP API (docs/relayer.md). */
export function createRelayerApp(deps: AppDeps): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(stripClientIdentity());
  app.use(requestLog(deps.logger));
  const routers = [facilitatorRouter(deps), sellerRouter({ ...deps.seller, readiness: deps.readiness })];
  app.use(requestMetrics(deps.metrics, routers));
  app.use(errorHandler(deps.logger));
  app.use(healthRoutes(deps.readiness, deps.inFlight));
  if (deps.metricsToken !== undefined) app.use(metricsRoute(deps.metrics.registry, deps.refreshMetrics, deps.metricsToken));
  app.use(failureFieldsByRoute());
  app.use(deps.inFlight.middleware());
  app.use(deps.rateLimiter.globalLimit());
  app.use(jsonBody());
  app.use(deps.rateLimiter.perNoteLimit());
  app.use(spendAdmission(deps.readiness, deps.store));
  for (const router of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}

import Koa from "koa";
import type { Logger } from "pino";
import type { AddressBook } from "../../lib/address-book.js";
import { METRICS_PATH, metricsRoute, routesOf, timeRequests } from "../../lib/metrics-http.js";
import type { IndexerMetrics } from "../metrics.js";
import type { IndexerReadiness } from "../readiness.js";
import type { IndexerQueries } from "../queries.js";
import { bearerAuth } from "./auth.js";
import { errorHandler } from "./error-handler.js";
import { indexerRouter } from "./routes.js";

export interface IndexerAppDeps {
  queries: IndexerQueries;
  /** The bearer token every route requires (INDEXER_TOKEN). */
  token: string;
  logger: Logger;
  /** The deployment it follows, served at /v1/deployment. */
  addressBook: AddressBook;
  readiness: IndexerReadiness;
  metrics: IndexerMetrics;
  /** GET /metrics is served on its own port (INDEXER_METRICS_PORT), not here. */
  metricsApart: boolean;
}

/** The probes of an orchestrator: outside the bearer token, like the health of any service. */
export const INDEXER_HEALTH_ROUTES = { live: "/health/live", ready: "/health/ready" } as const;
const OWN_PATHS = new Set<string>([INDEXER_HEALTH_ROUTES.live, INDEXER_HEALTH_ROUTES.ready, METRICS_PATH]);

/**
 * The indexer's HTTP API (docs/indexer.md): every route behind the bearer token, one error body shape; the health
 * probes open, GET /metrics behind the same token unless it is served on a port of its own.
 */
export function createIndexerApp({ queries, token, logger, addressBook, readiness, metrics, metricsApart }: IndexerAppDeps): Koa {
  const app = new Koa();
  app.silent = true;
  const router = indexerRouter(queries, addressBook);
  // Refusals of the bearer check count under the route they asked for.
  app.use(timeRequests(metrics.requests, errorCodeOf, routesOf(router, OWN_PATHS)));
  app.use(errorHandler(logger));
  app.use(async (ctx, next) => {
    if (ctx.method !== "GET" || (ctx.path !== INDEXER_HEALTH_ROUTES.live && ctx.path !== INDEXER_HEALTH_ROUTES.ready)) return next();
    if (ctx.path === INDEXER_HEALTH_ROUTES.live) {
      ctx.body = { live: true };
      return;
    }
    const { ready, checks } = await readiness.check();
    ctx.status = ready ? 200 : 503;
    ctx.body = { ready, checks };
  });
  if (!metricsApart) app.use(metricsRoute(metrics.registry, () => readiness.check(), token));
  app.use(bearerAuth(token));
  app.use(router.routes());
  return app;
}

/** The code of an error body ({ error: { code } }, sent as JSON text). */
function errorCodeOf(body: unknown): string | undefined {
  if (typeof body !== "string" || !body.startsWith('{"error"')) return undefined;
  const code = (JSON.parse(body) as { error?: { code?: unknown } }).error?.code;
  return typeof code === "string" ? code : undefined;
}

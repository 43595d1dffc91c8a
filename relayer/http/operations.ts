import type Router from "@koa/router";
import type { Middleware } from "koa";
import { METRICS_PATH, routesOf, timeRequests } from "../../lib/metrics-http.js";
import type { RelayerMetrics } from "../ops/metrics.js";
import type { Readiness } from "../ops/readiness.js";
import type { RelayerStore } from "../store/relayer-store.js";
import { isSpendRoute } from "./failure-fields.js";
import type { InFlightRequests } from "./in-flight.js";
import { nullifierHashIn } from "./rate-limit.js";

/** The probes of an orchestrator or load balancer: outside the facilitator API, never rate limited. */
export const HEALTH_ROUTES = { live: "/health/live", ready: "/health/ready" } as const;

/**
 * GET /health/live: the process answers (restart it when not). GET /health/ready: 200 when every readiness check
 * passes, else 503; both with each check and what it found (relayer/ops/readiness.ts); 503 at once while shutting down.
 */
export function healthRoutes(readiness: Readiness, inFlight: InFlightRequests): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== "GET") return next();
    if (ctx.path === HEALTH_ROUTES.live) {
      ctx.body = { live: true };
    } else if (ctx.path === HEALTH_ROUTES.ready && inFlight.isDraining) {
      ctx.status = 503;
      ctx.body = { ready: false, shuttingDown: true };
    } else if (ctx.path === HEALTH_ROUTES.ready) {
      const { ready, checks } = await readiness.check();
      ctx.status = ready ? 200 : 503;
      ctx.body = { ready, checks };
    } else {
      return next();
    }
  };
}

/**
 * Refuses a new spend while the relayer is not ready (relayer/ops/readiness.ts), before any proof or lease: a note
 * with no lease here has nothing sent for it, so the refusal's "nothing was spent" holds. A note that holds a
 * lease passes on: its retry resolves the lease from the chain (a replay, or an uncertain relay's outcome).
 */
export function spendAdmission(readiness: Readiness, store: RelayerStore): Middleware {
  return async (ctx, next) => {
    if (ctx.method === "POST" && isSpendRoute(ctx.path)) {
      const nullifierHash = nullifierHashIn((ctx.request as { body?: unknown }).body);
      const lease = nullifierHash === undefined ? undefined : await store.getLease(nullifierHash);
      if (lease === undefined || lease.state === "failed") await readiness.assertReady();
    }
    return next();
  };
}

/**
 * Times every request (lib/metrics-http.ts) under its route of `router`, refusals made before the router ran
 * included, and counts the error answers by code and the uncertain settlements.
 */
export function requestMetrics(metrics: RelayerMetrics, routers: readonly Router[]): Middleware {
  return timeRequests(metrics.requests, errorCodeOf, routesOf(routers, OWN_PATHS), (code) => {
    if (code === undefined) return;
    metrics.errors.inc({ code });
    if (code === "SETTLEMENT_UNCERTAIN") metrics.uncertainSettlements.inc();
  });
}

/** The paths served outside the router; any other path the router does not know is one label, whatever was asked. */
const OWN_PATHS = new Set<string>([HEALTH_ROUTES.live, HEALTH_ROUTES.ready, METRICS_PATH]);

function errorCodeOf(body: unknown): string | undefined {
  const code = typeof body === "object" && body !== null ? (body as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : undefined;
}

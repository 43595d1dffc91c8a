import { createHash, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type Router from "@koa/router";
import type { Middleware } from "koa";
import type { Histogram, Registry } from "prom-client";

/** Where a service's metrics are read: GET /metrics, on a port of its own or on the API port behind a token. */
export const METRICS_PATH = "/metrics";

/**
 * The Prometheus exposition of `registry`, after `refresh` (the gauges read at scrape time: balances, lag) has run;
 * a refresh that fails leaves the gauges as they were (the readiness gauges say what failed).
 */
async function exposition(registry: Registry, refresh: () => Promise<unknown>): Promise<string> {
  await refresh().catch(() => undefined);
  return registry.metrics();
}

/** Serves GET /metrics alone on host:port, apart from the API (port 0: a free one). Resolves once listening. */
export async function serveMetrics(registry: Registry, refresh: () => Promise<unknown>, host: string, port: number): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    if (request.method !== "GET" || new URL(request.url ?? "/", "http://metrics").pathname !== METRICS_PATH) {
      response.writeHead(404, { "content-type": "text/plain" }).end(`only GET ${METRICS_PATH} is served here\n`);
      return;
    }
    exposition(registry, refresh).then(
      (text) => response.writeHead(200, { "content-type": registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500, { "content-type": "text/plain" }).end(`${String(error)}\n`),
    );
  });
  server.listen(port, host);
  await once(server, "listening");
  return server;
}

const digest = (value: string) => createHash("sha256").update(value).digest();

/**
 * GET /metrics on the API port for callers presenting `Authorization: Bearer <token>` (compared in constant time);
 * other requests pass on.
 */
export function metricsRoute(registry: Registry, refresh: () => Promise<unknown>, token: string): Middleware {
  const expected = digest(token);
  return async (ctx, next) => {
    if (ctx.method !== "GET" || ctx.path !== METRICS_PATH) return next();
    const presented = /^Bearer (\S+)$/i.exec(ctx.get("authorization"))?.[1];
    if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
      ctx.status = 401;
      ctx.set("WWW-Authenticate", 'Bearer realm="metrics"');
      ctx.type = "text/plain";
      ctx.body = "send Authorization: Bearer <the metrics token>\n";
      return;
    }
    ctx.type = registry.contentType;
    ctx.body = await exposition(registry, refresh);
  };
}

/** The route label of a request that left before its router ran: the router's path of it, else undefined. */
export type RouteOf = (method: string, path: string) => string | undefined;

/**
 * The route label of requests answered before `router` ran (a readiness refusal, a rate limit, a bearer check): the
 * path of the router's route that matches them, or one of `ownPaths` served outside the router, so that they count
 * under their route; a path the router does not know stays undefined.
 */
export function routesOf(routers: Router | readonly Router[], ownPaths: ReadonlySet<string>): RouteOf {
  const all = Array.isArray(routers) ? routers : [routers as Router];
  return (method, path) => {
    if (ownPaths.has(path)) return path;
    for (const router of all) {
      const { pathAndMethod, path: onPath } = router.match(path, method);
      const route = [...pathAndMethod, ...onPath].find((layer) => layer.methods.length > 0)?.path;
      if (typeof route === "string") return route;
    }
    return undefined;
  };
}

/**
 * Times every request into `histogram` by route (the router's matched path, so a path parameter never becomes a
 * label; else `routeOf`'s answer; anything else "unmatched"), status and the error code `codeOf` reads from the
 * answer ("none" when it succeeded). Sits outside the error handler: it sees what left.
 */
export function timeRequests(
  histogram: Histogram<"route" | "status" | "code">,
  codeOf: (body: unknown) => string | undefined,
  routeOf: RouteOf,
  onAnswer?: (code: string | undefined) => void,
): Middleware {
  return async (ctx, next) => {
    const end = histogram.startTimer();
    try {
      await next();
    } finally {
      const code = codeOf(ctx.body);
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? routeOf(ctx.method, ctx.path) ?? "unmatched";
      end({ route, status: String(ctx.status), code: code ?? "none" });
      onAnswer?.(code);
    }
  };
}

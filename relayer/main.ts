import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { ConfigError } from "../lib/env-config.js";
import { METRICS_PATH, serveMetrics } from "../lib/metrics-http.js";
import { loadRelayerConfig } from "./config.js";
import { closeGracefully } from "./http/in-flight.js";
import { createRelayer } from "./relayer.js";

async function main(): Promise<void> {
  const config = loadRelayerConfig(process.env);
  const logger = pino({ level: config.logLevel });
  const relayer = await createRelayer(config, logger);
  const server = relayer.app.listen(config.port, config.host);
  // A port that cannot be bound (EADDRINUSE) ends the start: close what the relayer opened, or it keeps the process alive.
  await once(server, "listening").catch(async (error: unknown) => {
    await relayer.close();
    throw error;
  });
  const { port } = server.address() as AddressInfo;
  logger.info({ host: config.host, port, network: relayer.chain.network }, "relayer listening");
  const metricsServer =
    config.metricsPort === undefined ? undefined : await serveMetrics(relayer.metrics.registry, relayer.refreshMetrics, config.metricsHost, config.metricsPort);
  if (metricsServer !== undefined) {
    const { port: metricsPort } = metricsServer.address() as AddressInfo;
    logger.info({ host: config.metricsHost, port: metricsPort, url: `http://${config.metricsHost}:${metricsPort}${METRICS_PATH}` }, "relayer metrics listening");
  }
  if (config.metricsToken !== undefined) logger.info({ port, path: METRICS_PATH }, "relayer metrics served on the API port to bearers of RELAYER_METRICS_TOKEN");
  if (metricsServer === undefined && config.metricsToken === undefined) {
    logger.warn("relayer metrics off: set RELAYER_METRICS_PORT (a port of their own) or RELAYER_METRICS_TOKEN (on the API port) to serve GET /metrics");
  }
  const signal = await firstShutdownSignal();
  logger.info({ signal, inFlight: relayer.inFlight.count, graceMs: config.shutdownGraceMs }, "relayer shutting down");
  // Requests still running after the grace period are abandoned with their connections, unanswered, so none
  // is reported settled. Every spend holds a lease on its note (relayer/settlement/leased-withdrawals.ts): a
  // retry of the same request resolves an abandoned one from the chain, or frees the note once the lease is stale.
  const abandoned = await closeGracefully(server, relayer.inFlight, config.shutdownGraceMs);
  metricsServer?.close();
  await relayer.close();
  logger.info({ abandoned }, "relayer stopped");
  // An abandoned handler may still hold timers or prover threads that would keep the process alive.
  if (abandoned > 0) process.exit();
}

/** Resolves on the first SIGINT or SIGTERM; a second one then ends the process at once (the default action). */
function firstShutdownSignal(): Promise<NodeJS.Signals> {
  const signals = ["SIGINT", "SIGTERM"] as const;
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      for (const each of signals) process.off(each, onSignal);
      resolve(signal);
    };
    for (const each of signals) process.on(each, onSignal);
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exitCode = 1;
});

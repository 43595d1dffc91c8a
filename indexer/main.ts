import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { toWireJson } from "./api.js";
import { ConfigError } from "../lib/env-config.js";
import { METRICS_PATH, serveMetrics } from "../lib/metrics-http.js";
import { loadIndexerConfig } from "./config.js";
import { createIndexer } from "./indexer.js";

const USAGE = `usage: indexer [serve|sync]
  serve  follow the chain and answer the HTTP API (default)
  sync   catch up with the confirmed head once, screen and publish the ASP root, then exit
Configuration comes from the environment: see docs/indexer.md.`;

async function main(command: string): Promise<void> {
  if (command !== "serve" && command !== "sync") {
    console.error(USAGE);
    process.exitCode = 2;
    return;
  }
  const config = loadIndexerConfig(process.env);
  const logger = pino({ level: config.logLevel });
  const indexer = await createIndexer(config, logger);
  logger.info(
    { chainId: indexer.chainId, pool: indexer.addressBook.privacyPool, lastBlock: indexer.sync.lastBlock },
    "indexer loaded",
  );

  if (command === "sync") {
    await indexer.sync.catchUp();
    await indexer.curator.reloadLists();
    await indexer.curator.publish();
    logger.info(JSON.parse(toWireJson(indexer.queries.status())), "sync done");
    await indexer.close();
    return;
  }

  const server = indexer.app.listen(config.port, config.host);
  await once(server, "listening");
  logger.info({ host: config.host, port: (server.address() as AddressInfo).port }, "indexer API listening");
  const metricsServer =
    config.metricsPort === undefined
      ? undefined
      : await serveMetrics(indexer.metrics.registry, () => indexer.readiness.check(), config.metricsHost, config.metricsPort);
  if (metricsServer !== undefined) {
    const { port: metricsPort } = metricsServer.address() as AddressInfo;
    logger.info({ host: config.metricsHost, port: metricsPort, url: `http://${config.metricsHost}:${metricsPort}${METRICS_PATH}` }, "indexer metrics listening");
  } else {
    logger.info({ path: METRICS_PATH }, "indexer metrics served on the API port behind INDEXER_TOKEN (INDEXER_METRICS_PORT serves them apart)");
  }
  const stop = new AbortController();
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => stop.abort());
  await indexer.sync.follow(stop.signal, config.pollIntervalMs);
  server.closeAllConnections();
  server.close();
  metricsServer?.close();
  await indexer.close();
  logger.info("indexer stopped");
}

main(process.argv[2] ?? "serve").catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exitCode = 1;
});

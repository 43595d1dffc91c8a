// The whole local system in one command: a fresh hardhat node, the contracts, the indexer with its ASP curator
// and the relayer, each its own process on a free port; their metrics on ports of their own (fixed by default, for a
// Prometheus to scrape); prints what an agent and an operator need, keeps every log in one folder, and stops
// everything on Ctrl-C. A service that exits stops the stack at once with the end of its log.
//
//   npm run stack                    STACK_CHAIN_PORT=8545 puts the node on a known port
//   STACK_PROMETHEUS=1 npm run stack also starts the Prometheus of the PATH, with the alert rules
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { z } from "zod";
import { ConfigError, loadEnvConfig } from "../../lib/env-config.js";
import { startStack, type Stack } from "./stack.js";

const say = (tag: string, line: string) => console.log(`${`[${tag}]`.padEnd(10)} ${line}`);

const STACK_ENV = {
  chainPort: "STACK_CHAIN_PORT",
  relayerMetricsPort: "STACK_RELAYER_METRICS_PORT",
  indexerMetricsPort: "STACK_INDEXER_METRICS_PORT",
  prometheus: "STACK_PROMETHEUS",
  prometheusPort: "STACK_PROMETHEUS_PORT",
} as const;
const port = z
  .string()
  .regex(/^[0-9]+$/, "must be a port number (0: a free one)")
  .transform(Number)
  .pipe(z.number().max(65_535, "must be a port number (0: a free one)"));
/** Where Prometheus looks by convention: the relayer's metrics on 9464, the indexer's next to it, Prometheus on 9090. */
const StackConfigSchema = z
  .object({
    chainPort: port.optional(),
    relayerMetricsPort: port.default(9464),
    indexerMetricsPort: port.default(9465),
    prometheus: z.enum(["0", "1", "false", "true"], "must be 1 or 0").transform((value) => value === "1" || value === "true").default(false),
    prometheusPort: port.default(9090),
  })
  .strict();

/** The lines an agent or an operator copies: every URL, the indexer token and the contracts. */
function printStack(stack: Stack): void {
  say("ready", "the stack is up; for an agent or a second terminal:");
  for (const [name, value] of [
    ["RPC_URL", stack.rpcUrl],
    ["RELAYER_URL", stack.relayerUrl],
    ["INDEXER_URL", stack.indexerUrl],
    ["INDEXER_TOKEN", stack.indexerToken],
    ["RELAYER_METRICS_URL", stack.relayerMetricsUrl],
    ["INDEXER_METRICS_URL", stack.indexerMetricsUrl],
    ...(stack.prometheusUrl === undefined ? [] : [["PROMETHEUS_URL", stack.prometheusUrl] as const]),
    ["ADDRESS_BOOK", stack.addressBookFile],
    ["ENTRYPOINT", stack.contracts.entrypoint],
    ["PRIVACY_POOL", stack.contracts.privacyPool],
    ["USDC", stack.contracts.usdc],
    ["BATCH_SETTLEMENT", stack.contracts.batchSettlement],
    ...(stack.sellerEip3009Settler === undefined ? [] : [["SELLER_EIP3009_SETTLER", stack.sellerEip3009Settler] as const]),
    // Development keys, funded on this node only: a seller's facilitator of its own (docs/accept-private-payments.md).
    ...(stack.sellerFacilitatorKeys === undefined
      ? []
      : ([
          ["SELLER_SETTLER_KEY", stack.sellerFacilitatorKeys.settler],
          ["SELLER_RELAY_KEY", stack.sellerFacilitatorKeys.relay],
        ] as const)),
  ] as const) {
    console.log(`  ${name}=${value}`);
  }
  say("logs", `${stack.logDir}: <service>.log, the SQLite state and stack.json (all of the above as JSON)`);
  if (stack.prometheusUrl === undefined) {
    say("metrics", `a Prometheus of your own: prometheus --config.file=${stack.prometheusConfigFile} (or STACK_PROMETHEUS=1 npm run stack)`);
  }
  say("ready", "Ctrl-C stops everything");
}

async function main(): Promise<void> {
  const config = loadEnvConfig(STACK_ENV, StackConfigSchema, process.env);
  const logDir = mkdtempSync(path.join(tmpdir(), "x402-stack-"));
  say("logs", `each process writes to ${logDir}/<name>.log`);
  const stack = await startStack({
    chainPort: config.chainPort,
    metricsPorts: { relayer: config.relayerMetricsPort, indexer: config.indexerMetricsPort },
    prometheusPort: config.prometheus ? config.prometheusPort : undefined,
    variables: {
      addressBook: "ADDRESS_BOOK",
      postmanPrivateKey: "POSTMAN_PRIVATE_KEY",
      relayerPrivateKey: "RELAYER_PRIVATE_KEY",
      treasury: "TREASURY_ADDRESS",
      relayerMetricsPort: STACK_ENV.relayerMetricsPort,
      indexerMetricsPort: STACK_ENV.indexerMetricsPort,
      prometheusPort: STACK_ENV.prometheusPort,
    },
    logDir,
    say,
  });
  printStack(stack);
  const stopped = new Promise<string>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve(signal));
  });
  try {
    say("stop", `${await Promise.race([stopped, stack.failure])}: stopping every service`);
  } catch (error) {
    console.error((error as Error).message);
    process.exitCode = 1;
  } finally {
    await stack.stop();
    say("stop", "stopped");
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

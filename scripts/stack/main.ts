// The whole local system in one command: a fresh hardhat node, the contracts, the indexer with its ASP curator
// and the relayer, each its own process on a free port; prints what an agent needs, keeps every log in one
// folder, and stops everything on Ctrl-C. A service that exits stops the stack at once with the end of its log.
//
//   npm run stack                (STACK_CHAIN_PORT=8545 to put the node on a known port)
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { z } from "zod";
import { ConfigError, loadEnvConfig } from "../../lib/env-config.js";
import { startStack, type Stack } from "./stack.js";

const say = (tag: string, line: string) => console.log(`${`[${tag}]`.padEnd(10)} ${line}`);

const STACK_ENV = { chainPort: "STACK_CHAIN_PORT" } as const;
const StackConfigSchema = z.object({ chainPort: z.string().regex(/^[0-9]+$/, "must be a port number").transform(Number).optional() }).strict();

/** The lines an agent or an operator copies: every URL, the indexer token and the contracts. */
function printStack(stack: Stack): void {
  say("ready", "the stack is up; for an agent or a second terminal:");
  for (const [name, value] of [
    ["RPC_URL", stack.rpcUrl],
    ["RELAYER_URL", stack.relayerUrl],
    ["INDEXER_URL", stack.indexerUrl],
    ["INDEXER_TOKEN", stack.indexerToken],
    ["ADDRESS_BOOK", stack.addressBookFile],
    ["ENTRYPOINT", stack.contracts.entrypoint],
    ["PRIVACY_POOL", stack.contracts.privacyPool],
    ["USDC", stack.contracts.usdc],
  ] as const) {
    console.log(`  ${name}=${value}`);
  }
  say("logs", `${stack.logDir}: <service>.log, the SQLite state and stack.json (all of the above as JSON)`);
  say("ready", "Ctrl-C stops everything");
}

async function main(): Promise<void> {
  const config = loadEnvConfig(STACK_ENV, StackConfigSchema, process.env);
  const logDir = mkdtempSync(path.join(tmpdir(), "x402-stack-"));
  say("logs", `each process writes to ${logDir}/<name>.log`);
  const stack = await startStack({
    chainPort: config.chainPort,
    variables: { addressBook: "ADDRESS_BOOK", postmanPrivateKey: "POSTMAN_PRIVATE_KEY", relayerPrivateKey: "RELAYER_PRIVATE_KEY", treasury: "TREASURY_ADDRESS" },
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

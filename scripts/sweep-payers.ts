// Sweeps what the pool paid and nobody took back into the pool as the agents' refund notes (relayer/x402/payer-sweep.ts):
// settle-x402 authorizations that expired unused (Entrypoint.refundAuthorization) and the rest of private tabs
// (Entrypoint.withdrawTab, returnTab). Every call is one anyone may make; the relaying key only pays the gas. Reads
// the relayer's configuration (docs/relayer.md). Exits 1 when the sweep could not run or a refund failed (each named
// with its lease's nullifier hash).
//
//   npm run sweep:payers
import { ConfigError } from "../lib/env-config.js";
import { connectPoolChain } from "../relayer/chain/connect-chain.js";
import { loadRelayerConfig } from "../relayer/config.js";
import { openRelayerStore } from "../relayer/store/open-store.js";
import { sweepExpiredPayers } from "../relayer/x402/payer-sweep.js";

async function main(): Promise<void> {
  const config = loadRelayerConfig(process.env);
  const { chain } = await connectPoolChain(config);
  const { store } = await openRelayerStore(config);
  try {
    const { records, failures } = await sweepExpiredPayers({
      store,
      chain,
      log: (line) => console.log(`[sweep] ${line}`),
    });
    const count = (outcome: string) => records.filter((record) => record.outcome === outcome).length;
    console.log(
      `[sweep] ${records.length + failures.length} expired payer(s): ${count("deposited")} refunded, ${count("used")} used by their seller, ` +
        `${count("not-recorded")} with no payment recorded, ${failures.length} failed (retried by the next sweep)`,
    );
    if (failures.length > 0) process.exitCode = 1;
  } finally {
    chain.provider.destroy();
    await store.close();
  }
}

/** What the operator reads: a typed error's code and message (which says what to do), never a stack. */
function describeFailure(error: unknown): string {
  if (error instanceof ConfigError) return error.message;
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === "string" ? `${code}: ${message}` : message;
}

main().catch((error: unknown) => {
  console.error(`[sweep] ${describeFailure(error)}`);
  process.exitCode = 1;
});

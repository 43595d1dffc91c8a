// Sweeps settle-x402 payers whose authorization expired unused: exactly the payout the relay recorded on chain
// goes back into the pool as the agent's refund note through Entrypoint.depositRefund, sent by the relaying key,
// which needs REFUNDER_ROLE (relayer/x402/payer-sweep.ts). Reads the relayer's configuration (docs/relayer.md).
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
    const records = await sweepExpiredPayers({
      store,
      chain,
      payerKeySecret: config.payerKeySecret,
      log: (line) => console.log(`[sweep] ${line}`),
    });
    const count = (outcome: string) => records.filter((record) => record.outcome === outcome).length;
    console.log(`[sweep] ${records.length} expired payer(s): ${count("deposited")} refunded, ${count("used")} used by their seller, ${count("not-recorded")} with no payment recorded`);
  } finally {
    chain.provider.destroy();
    await store.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exitCode = 1;
});

import { setTimeout as sleep } from "node:timers/promises";
import { nullifierHashOf, type Note } from "../../../sdk/index.js";
import type { LocalChain } from "../../indexer/helpers/local-chain.js";
import type { RunningRelayer } from "./relayer-harness.js";

/** A local chain that mines only when told, to hold a relay pending, and a relayer's relays on it. */
export function manualMining(chain: LocalChain, relayer: () => RunningRelayer) {
  const provider = chain.connection.provider;
  return {
    setAutomine: (on: boolean) => provider.request({ method: "evm_setAutomine", params: [on] }),
    mine: () => provider.request({ method: "evm_mine", params: [] }),
    /** Waits until the note's lease records a signed relay transaction and the node has it (pending). */
    async pendingRelay(note: Note) {
      for (;;) {
        const lease = await relayer().relayer.store.getLease(nullifierHashOf(note.nullifier));
        if (lease?.state === "withdrawing" && lease.fundingTxHash !== null) {
          const pending = await chain.connection.ethers.provider.getTransaction(lease.fundingTxHash);
          if (pending !== null) return pending;
        }
        await sleep(50);
      }
    },
  };
}

import type { WithdrawCircuitInput, WithdrawProof } from "../../sdk/index.js";
import type { TimedProof } from "../../sdk/prover/index.js";

/** What the settlement needs of a prover; relayer/prover/prover-service.ts implements it with preloaded keys. */
export interface Prover {
  /**
   * Proves a withdrawal. Throws RelayerError INVALID_PROOF when the input admits no witness, and PROVER_BUSY
   * (with a Retry-After) when too many proofs are waiting.
   */
  prove(input: WithdrawCircuitInput): Promise<TimedProof>;
  /** Whether a proof the relayer did not make (an agent's) verifies against the verification key. */
  verify(proof: WithdrawProof): Promise<boolean>;
  /** Releases the prover's threads; the relayer's close() calls it. */
  close(): Promise<void>;
}

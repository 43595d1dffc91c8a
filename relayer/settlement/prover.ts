import type { WithdrawCircuitInput, WithdrawProof } from "../../sdk/index.js";

export interface TimedProof extends WithdrawProof {
  /** Witness and proof, from the moment a worker took the proof up (queueing not counted). */
  proofTimeMs: number;
  /** The witness alone, part of proofTimeMs. */
  witnessTimeMs: number;
}

/** What the settlement needs of a prover; relayer/prover/prover-service.ts implements it with preloaded keys. */
export interface Prover {
  /**
   * Proves a withdrawal. Throws RelayerError INVALID_PROOF when the input admits no witness, and PROVER_BUSY
   * (with a Retry-After) when too many proofs are waiting.
   */
  prove(input: WithdrawCircuitInput): Promise<TimedProof>;
  /** Releases the prover's threads; the relayer's close() calls it. */
  close(): Promise<void>;
}

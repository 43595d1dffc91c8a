// The SDK's own names for what snarkjs reads and writes: its package's types must not need snarkjs' (it ships none;
// sdk/types/snarkjs.d.ts declares its API for these sources only, with this proof type). The proof's shape is in a
// module of its own, imported by what only carries proofs (the seller's package among them) without the prover.

/** A Groth16 proof as snarkjs writes it: affine coordinates as decimal strings. */
export interface Groth16Proof {
  pi_a: string[];
  pi_b: string[][];
  pi_c: string[];
  protocol: string;
  curve: string;
}

export interface WithdrawProof {
  proof: Groth16Proof;
  /** Positional public signals as decimal strings (see public-signals.ts for their names). */
  publicSignals: string[];
}

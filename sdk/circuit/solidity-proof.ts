import type { WithdrawProof } from "./proof.js";

/** ProofLib.WithdrawProof as the contracts take it. */
export interface SolidityWithdrawProof {
  pA: [bigint, bigint];
  pB: [[bigint, bigint], [bigint, bigint]];
  pC: [bigint, bigint];
  pubSignals: bigint[];
}

/**
 * Converts a snarkjs proof to the verifier's calldata layout. The G2 point's coordinates are swapped because
 * snarkjs writes Fp2 elements as (c0, c1) and the EVM pairing precompile reads (c1, c0).
 */
export function toSolidityProof({ proof, publicSignals }: WithdrawProof): SolidityWithdrawProof {
  const big = (xs: string[]) => xs.map(BigInt);
  const [ax, ay] = big(proof.pi_a);
  const [cx, cy] = big(proof.pi_c);
  const [b0, b1] = proof.pi_b.map(big);
  if (ax === undefined || ay === undefined || cx === undefined || cy === undefined || !b0 || !b1) {
    throw new TypeError("malformed Groth16 proof");
  }
  return {
    pA: [ax, ay],
    pB: [
      [b0[1]!, b0[0]!],
      [b1[1]!, b1[0]!],
    ],
    pC: [cx, cy],
    pubSignals: big(publicSignals),
  };
}

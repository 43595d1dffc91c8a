import type { Groth16Proof } from "../circuit/prover.js";
import type { Bn128, Element, Group } from "./curve.js";
import type { MsmName } from "./proving-engine.js";
import type { ProvingKey } from "./proving-key.js";

/** The multi-exponentiation sums of one proof, each as the parts the workers computed (Jacobian points). */
export type MsmSums = Record<MsmName, Uint8Array[]>;

/**
 * The Groth16 proof from the multi-exponentiation sums, blinded with fresh random r and s, as snarkjs'
 * groth16.prove does: pi_a = A + alpha + r delta, pi_b = B2 + beta + s delta, and
 * pi_c = C + H + s pi_a + r (B1 + beta + s delta) - r s delta.
 */
export function assembleProof(curve: Bn128, key: ProvingKey, sums: MsmSums): Groth16Proof {
  const { Fr, G1, G2 } = curve;
  const r = Fr.random();
  const s = Fr.random();
  const total = (group: Group, parts: Uint8Array[]) => parts.reduce((sum, part) => group.add(sum, part));
  const piA = G1.add(G1.add(total(G1, sums.a), key.alpha1), G1.timesFr(key.delta1, r));
  const piB = G2.add(G2.add(total(G2, sums.b2), key.beta2), G2.timesFr(key.delta2, s));
  const b1 = G1.add(G1.add(total(G1, sums.b1), key.beta1), G1.timesFr(key.delta1, s));
  let piC = G1.add(total(G1, sums.c), total(G1, sums.h));
  piC = G1.add(piC, G1.timesFr(piA, s));
  piC = G1.add(piC, G1.timesFr(b1, r));
  piC = G1.add(piC, G1.timesFr(key.delta1, Fr.neg(Fr.mul(r, s))));
  return {
    pi_a: affineCoordinates(G1, piA) as string[],
    pi_b: affineCoordinates(G2, piB) as string[][],
    pi_c: affineCoordinates(G1, piC) as string[],
    protocol: "groth16",
    curve: "bn128",
  };
}

/** A point's affine coordinates as decimal strings, the way snarkjs writes them into a proof. */
function affineCoordinates(group: Group, point: Element): unknown[] {
  const toStrings = (value: unknown): unknown => (Array.isArray(value) ? value.map(toStrings) : String(value));
  return group.toObject(group.toAffine(point)).map(toStrings);
}

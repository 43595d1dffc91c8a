import { assertFieldElement, SNARK_SCALAR_FIELD as P } from "./field.js";
import { POSEIDON2_T3_CONSTANTS } from "./poseidon2-constants.js";

// Poseidon2 (eprint 2023/323) over BN254 with t = 3: S-box x^5, 8 external rounds, 56 internal rounds, HorizenLabs'
// poseidon2_instance_bn256.rs. The linear layers are additions only (external M_E = circ(2, 1, 1), internal
// M_I = [[2,1,1],[1,2,1],[1,1,3]]), so only the 80 S-boxes multiply: the same function as
// circuits/poseidon2.circom and contracts/lib/poseidon/Poseidon2T3.sol, which are tested against this one.

const { externalInitial, internal, externalFinal } = POSEIDON2_T3_CONSTANTS;

/** The permutation's state: three field elements. */
export type Poseidon2State = readonly [bigint, bigint, bigint];

const pow5 = (x: bigint): bigint => {
  const x2 = (x * x) % P;
  return (((x2 * x2) % P) * x) % P;
};

// Words stay below 4p between rounds (the S-boxes reduce, the additions do not): one more constant keeps them
// under 2^256, where bigint products are cheapest. Only the internal rounds, which double words 1 and 2, reduce.
function externalRounds(rounds: readonly (readonly [bigint, bigint, bigint])[], s0: bigint, s1: bigint, s2: bigint): [bigint, bigint, bigint] {
  for (const [c0, c1, c2] of rounds) {
    s0 = pow5(s0 + c0);
    s1 = pow5(s1 + c1);
    s2 = pow5(s2 + c2);
    const sum = s0 + s1 + s2;
    s0 += sum;
    s1 += sum;
    s2 += sum;
  }
  return [s0, s1, s2];
}

/** The permutation of words already checked to be field elements. */
function permute(w0: bigint, w1: bigint, w2: bigint): [bigint, bigint, bigint] {
  // The initial external linear layer, then the first external rounds.
  const sum = w0 + w1 + w2;
  let [s0, s1, s2] = externalRounds(externalInitial, w0 + sum, w1 + sum, w2 + sum);
  s1 %= P;
  s2 %= P;
  for (const c of internal) {
    s0 = pow5(s0 + c);
    const sum = s0 + s1 + s2;
    s0 += sum;
    s1 = (s1 + sum) % P;
    s2 = (2n * s2 + sum) % P;
  }
  [s0, s1, s2] = externalRounds(externalFinal, s0, s1, s2);
  return [s0 % P, s1 % P, s2 % P];
}

/**
 * The Poseidon2 permutation of a state of field elements (each in [0, p)): HorizenLabs' `permutation`, which the
 * test vector of permuting [0, 1, 2] pins. Throws a RangeError on a word outside the field.
 */
export function poseidon2Permutation(state: Poseidon2State): [bigint, bigint, bigint] {
  state.forEach((word, i) => assertFieldElement(word, `state[${i}]`));
  return permute(...state);
}

/**
 * Two-to-one compression for Merkle tree nodes: the first word of the permutation of [left, right, 0], as
 * HorizenLabs' `compress` for Merkle trees (and bkomuves' circom `Compression`). It is a sponge of rate 2 and
 * capacity 1 that absorbs exactly two words and squeezes one; the input length is fixed, so it needs no padding,
 * and one permutation per node keeps the contract's tree insert cheap. Inputs must be field elements (a
 * RangeError otherwise): the contract reduces words mod p, so a word and that word plus p hash alike there.
 */
export function poseidon2Hash2(left: bigint, right: bigint): bigint {
  assertFieldElement(left, "left");
  assertFieldElement(right, "right");
  return permute(left, right, 0n)[0];
}

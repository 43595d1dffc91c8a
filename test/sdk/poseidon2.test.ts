import { expect } from "chai";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { hexlify, randomBytes } from "ethers";
import { grainFieldElements } from "../../scripts/crypto/grain.js";
import { derivePoseidon2Constants } from "../../scripts/crypto/poseidon2-constants.js";
import { SNARK_SCALAR_FIELD as P } from "../../sdk/crypto/field.js";
import { poseidon2Hash2, poseidon2Permutation, type Poseidon2State } from "../../sdk/crypto/poseidon2.js";
import { POSEIDON2_T3_CONSTANTS } from "../../sdk/crypto/poseidon2-constants.js";

const randomField = () => BigInt(hexlify(randomBytes(32))) % P;

/** circomlib's unoptimized Poseidon round constants for width t, from the reference script's own output. */
function circomlibConstants(t: number): bigint[] {
  const file = createRequire(import.meta.url).resolve("circomlib/circuits/poseidon_constants_old.circom");
  const source = readFileSync(file, "utf8");
  const body = source.slice(source.indexOf("function POSEIDON_C(t)"), source.indexOf("function POSEIDON_M(t)"));
  const branch = body.slice(body.indexOf(`if (t == ${t})`), body.indexOf(`if (t == ${t + 1})`));
  return [...branch.matchAll(/\b\d{10,}\b/g)].map(([n]) => BigInt(n));
}

/**
 * The permutation as HorizenLabs' plain implementation writes it, with the matrices as matrices and every word
 * reduced after every operation: an independent reading to check the optimized one against.
 */
function referencePermutation(input: Poseidon2State): bigint[] {
  const external = [[2n, 1n, 1n], [1n, 2n, 1n], [1n, 1n, 2n]];
  const internal = [[2n, 1n, 1n], [1n, 2n, 1n], [1n, 1n, 3n]];
  const mul = (m: bigint[][], s: bigint[]) => m.map((row) => row.reduce((acc, a, j) => (acc + a * s[j]!) % P, 0n));
  const pow5 = (x: bigint) => (x * x * x * x * x) % P;
  const { externalInitial, internal: rc, externalFinal } = POSEIDON2_T3_CONSTANTS;
  let state = mul(external, [...input]);
  const full = (c: readonly bigint[]) => (state = mul(external, state.map((x, i) => pow5((x + c[i]!) % P))));
  externalInitial.forEach(full);
  for (const c of rc) state = mul(internal, [pow5((state[0]! + c) % P), state[1]!, state[2]!]);
  externalFinal.forEach(full);
  return state;
}

describe("Poseidon2 over BN254, t = 3 (sdk/crypto/poseidon2.ts)", function () {
  it("derives round constants with the reference's Grain LFSR: circomlib's Poseidon constants come out", function () {
    // circomlib ran generate_parameters_grain.sage with field 1, S-box 0, n = 254, R_F = 8 and R_P = 56 (t = 2),
    // 57 (t = 3): (R_F + R_P) * t constants each.
    for (const [t, roundsP] of [[2, 56], [3, 57]] as const) {
      const expected = circomlibConstants(t);
      expect(expected).to.have.length((8 + roundsP) * t);
      expect(grainFieldElements({ field: 1, sbox: 0, n: 254, t, roundsF: 8, roundsP }, P, expected.length)).to.deep.equal(expected);
    }
  });

  it("uses the constants of HorizenLabs' poseidon2_instance_bn256.rs, as derived (the generated file is current)", function () {
    const derived = derivePoseidon2Constants();
    expect(POSEIDON2_T3_CONSTANTS).to.deep.include(derived);
    const { externalInitial, internal, externalFinal } = POSEIDON2_T3_CONSTANTS;
    expect([externalInitial.length, internal.length, externalFinal.length]).to.deep.equal([4, 56, 4]);
    // Rows 0, 4 (first internal), 59 (last internal) and 63 of the instance's RC3.
    expect(externalInitial[0]).to.deep.equal([
      0x1d066a255517b7fd8bddd3a93f7804ef7f8fcde48bb4c37a59a09a1a97052816n,
      0x29daefb55f6f2dc6ac3f089cebcc6120b7c6fef31367b68eb7238547d32c1610n,
      0x1f2cb1624a78ee001ecbd88ad959d7012572d76f08ec5c4f9e8b7ad7b0b4e1d1n,
    ]);
    expect(internal[0]).to.equal(0x1a1d063e54b1e764b63e1855bff015b8cedd192f47308731499573f23597d4b5n);
    expect(internal[55]).to.equal(0x268076b0054fb73f67cee9ea0e51e3ad50f27a6434b5dceb5bdde2299910a4c9n);
    expect(externalFinal[3]).to.deep.equal([
      0x01fd6af15956294f9dfe38c0d976a088b21c21e4a1c2e823f912f44961f9a9cen,
      0x18e5abedd626ec307bca190b8b2cab1aaee2e62ed229ba5a5ad8518d4e5f2a57n,
      0x0fc1bbceba0590f5abbdffa6d3b35e3297c021a3a409926d0e2d54dc1c84fda6n,
    ]);
  });

  it("permutes [0, 1, 2] to the reference's published test vector", function () {
    expect(poseidon2Permutation([0n, 1n, 2n])).to.deep.equal([
      0x0bb61d24daca55eebcb1929a82650f328134334da98ea4f847f760054f4a3033n,
      0x303b6f7c86d043bfcbcc80214f26a30277a15d3f74ca654992defe7ff8d03570n,
      0x1ed25194542b12eef8617361c3ba7c52e660b145994427cc86296242cf766ec8n,
    ]);
  });

  it("agrees with a matrix-by-matrix reading of the reference on edge and random states", function () {
    const states: Poseidon2State[] = [[0n, 0n, 0n], [P - 1n, P - 1n, P - 1n], [1n, P - 1n, 0n]];
    for (let i = 0; i < 20; i++) states.push([randomField(), randomField(), randomField()]);
    for (const state of states) expect(poseidon2Permutation(state), `${state}`).to.deep.equal(referencePermutation(state));
  });

  it("hashes two field elements as the first word of the permutation of [left, right, 0]", function () {
    const [a, b] = [randomField(), randomField()];
    expect(poseidon2Hash2(a, b)).to.equal(referencePermutation([a, b, 0n])[0]);
    expect(poseidon2Hash2(a, b)).to.not.equal(poseidon2Hash2(b, a));
    expect(poseidon2Hash2(0n, 0n)).to.equal(referencePermutation([0n, 0n, 0n])[0]);
  });

  it("refuses words outside the field", function () {
    expect(() => poseidon2Hash2(P, 0n)).to.throw(RangeError, /left/);
    expect(() => poseidon2Hash2(0n, -1n)).to.throw(RangeError, /right/);
    expect(() => poseidon2Permutation([0n, 0n, P])).to.throw(RangeError, /state\[2\]/);
  });
});

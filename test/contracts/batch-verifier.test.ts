import { expect } from "chai";
import { AbiCoder, toBeHex } from "ethers";
import { network } from "hardhat";
import { namePublicSignals, type SolidityWithdrawProof } from "../../sdk/index.js";
import { proveIndependentWithdrawals } from "./helpers/independent-proofs.js";
import { withSignal } from "./helpers/withdrawals.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture } = networkHelpers;

/** BN254's base field (coordinates) and group order (public signals). */
const P = 21888242871839275222246405745257275088696311157297823662689037894645226208583n;
const R = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;

/** The relayBatch target is 300k gas per withdrawal; the verifier may take a third of it at k = 16. */
const MAX_VERIFIER_GAS_PER_PROOF_AT_16 = 100_000;

async function deployVerifiers() {
  return {
    batch: await ethers.deployContract("WithdrawalBatchVerifier"),
    single: await ethers.deployContract("WithdrawalVerifierHarness"),
  };
}

type G1 = [bigint, bigint];

/** a + b on BN254's G1, by the ECADD precompile. */
async function g1Add(a: G1, b: G1): Promise<G1> {
  const coder = AbiCoder.defaultAbiCoder();
  const sum = await ethers.provider.call({ to: toBeHex(6, 20), data: coder.encode(["uint256[4]"], [[...a, ...b]]) });
  const [x, y] = coder.decode(["uint256", "uint256"], sum) as unknown as G1;
  return [x, y];
}

/** A copy of `proof` with its `index`-th coordinate word (pA, pB, pC in calldata order) replaced. */
function withCoordinate(proof: SolidityWithdrawProof, index: number, value: bigint): SolidityWithdrawProof {
  const w = [...proof.pA, ...proof.pB[0], ...proof.pB[1], ...proof.pC] as bigint[];
  w[index] = value;
  return { ...proof, pA: [w[0]!, w[1]!], pB: [[w[2]!, w[3]!], [w[4]!, w[5]!]], pC: [w[6]!, w[7]!] };
}

const COORDINATE_NAMES = ["A.x", "A.y", "B.x.c1", "B.x.c0", "B.y.c1", "B.y.c0", "C.x", "C.y"];

describe("WithdrawalBatchVerifier", function () {
  // Four valid proofs of distinct notes, each made once (proving takes a second or two).
  let a: SolidityWithdrawProof, b: SolidityWithdrawProof, c: SolidityWithdrawProof, d: SolidityWithdrawProof;

  before(async function () {
    [a, b, c, d] = (await proveIndependentWithdrawals(4)) as [SolidityWithdrawProof, SolidityWithdrawProof, SolidityWithdrawProof, SolidityWithdrawProof];
  });

  /** Batches holding `bad` alone, first, second and last, among valid proofs: it must fail wherever it sits. */
  const batchesWith = (bad: SolidityWithdrawProof) => [[bad], [bad, b], [a, bad], [a, b, c, bad], [a, bad, c, d]];

  describe("accepts", function () {
    it("a single proof (k = 1), as the single verifier does", async function () {
      const { batch, single } = await loadFixture(deployVerifiers);
      expect(await single.verifyProof(a.pA, a.pB, a.pC, a.pubSignals)).to.equal(true);
      expect(await batch.verifyProofs([a])).to.equal(true);
    });

    it("batches of 2 and 4 distinct valid proofs, in any order", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      expect(await batch.verifyProofs([a, b])).to.equal(true);
      expect(await batch.verifyProofs([b, a])).to.equal(true);
      expect(await batch.verifyProofs([a, b, c, d])).to.equal(true);
      expect(await batch.verifyProofs([d, c, b, a])).to.equal(true);
    });

    it("the same proof twice: stopping a double spend is the pool's nullifier check", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      expect(await batch.verifyProofs([a, a])).to.equal(true);
      expect(await batch.verifyProofs([a, b, a, b])).to.equal(true);
    });
  });

  describe("rejects", function () {
    it("an empty batch", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      expect(await batch.verifyProofs([])).to.equal(false);
    });

    it("a proof with a changed public signal, wherever it sits", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      const changed = withSignal(c, "valueFeeAndDepths", namePublicSignals(c.pubSignals).valueFeeAndDepths + 1n);
      for (const proofs of batchesWith(changed)) expect(await batch.verifyProofs(proofs)).to.equal(false);
    });

    it("a proof with A and C swapped", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      const swapped = { ...c, pA: c.pC, pC: c.pA };
      for (const proofs of batchesWith(swapped)) expect(await batch.verifyProofs(proofs)).to.equal(false);
    });

    it("a valid proof presented with another proof's public signals", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      const misattributed = { ...c, pubSignals: d.pubSignals };
      for (const proofs of batchesWith(misattributed)) expect(await batch.verifyProofs(proofs)).to.equal(false);
    });

    it("two bad proofs whose errors cancel in an unweighted sum (C + G and C - G)", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      // With every weight 1 the C terms would add up to 2C, as in the valid batch [a, a].
      const up = { ...a, pC: await g1Add(a.pC, [1n, 2n]) };
      const down = { ...a, pC: await g1Add(a.pC, [1n, P - 2n]) };
      expect(await batch.verifyProofs([up, down])).to.equal(false);
      expect(await batch.verifyProofs([b, up, down])).to.equal(false);
    });

    it("a public signal at or above the group order, though it equals a valid one mod the order", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      // Accepted, an aliased nullifier hash would spend the note a second time.
      const aliased = withSignal(c, "nullifierHash", namePublicSignals(c.pubSignals).nullifierHash + R);
      for (const proofs of batchesWith(aliased)) expect(await batch.verifyProofs(proofs)).to.equal(false);
    });

    it("a coordinate at or above the base field, in A, B or C", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      for (const [index, name] of COORDINATE_NAMES.entries()) {
        const words = [...c.pA, ...c.pB[0], ...c.pB[1], ...c.pC];
        const overflowed = withCoordinate(c, index, words[index]! + P);
        for (const proofs of batchesWith(overflowed)) expect(await batch.verifyProofs(proofs), name).to.equal(false);
      }
    });

    it("a coordinate at or above the base field before any precompile call, which would burn the gas it is given", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      const overflowed = withCoordinate(c, 7, c.pC[1] + P);
      const gasLimit = 10_000_000n;
      const receipt = await (await batch.verifyProofs.send([a, b, overflowed], { gasLimit })).wait();
      expect(receipt!.gasUsed).to.be.below(gasLimit / 20n);
    });

    it("a point off the curve", async function () {
      const { batch } = await loadFixture(deployVerifiers);
      // 3^2 != 1^3 + 3. The precompile that meets it fails; the verifier answers false.
      for (const offCurve of [{ ...c, pA: [1n, 3n] as G1 }, { ...c, pC: [1n, 3n] as G1 }]) {
        for (const proofs of batchesWith(offCurve)) expect(await batch.verifyProofs(proofs)).to.equal(false);
      }
    });
  });

  it(`costs under ${MAX_VERIFIER_GAS_PER_PROOF_AT_16.toLocaleString("en-US")} gas per proof at k = 16 (npm run bench:batch-verifier measures)`, async function () {
    const { batch } = await loadFixture(deployVerifiers);
    // Gas does not depend on which valid proofs these are: the four repeat.
    const proofs = Array.from({ length: 16 }, (_, i) => [a, b, c, d][i % 4]!);
    expect(await batch.verifyProofs(proofs)).to.equal(true);
    const gas = Number(await batch.verifyProofs.estimateGas(proofs));
    expect(gas / proofs.length).to.be.below(MAX_VERIFIER_GAS_PER_PROOF_AT_16);
  });
});

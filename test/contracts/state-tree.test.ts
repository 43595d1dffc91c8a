import { expect } from "chai";
import { network } from "hardhat";
import { createLeanIMT } from "../../sdk/index.js";
import type { StateTreeHarness } from "../../types/ethers-contracts/index.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture, mine } = networkHelpers;

const HISTORY = 64;
const LIFETIME_BLOCKS = 128;

async function deployHarness() {
  return { harness: (await ethers.deployContract("StateTreeHarness")) as unknown as StateTreeHarness };
}

/** Distinct non-zero field elements. */
const leavesFrom = (first: number, count: number) => Array.from({ length: count }, (_, i) => BigInt(1_000 + first + i));

describe("StateTree (the pool's tree and root history)", function () {
  it("appends one at a time and in batches to the roots of zk-kit's LeanIMT, across depth changes and odd starts", async function () {
    const { harness } = await loadFixture(deployHarness);
    const reference = createLeanIMT();
    // Single inserts between batches of every shape: starting at even and odd positions, filling a level exactly,
    // crossing one or several depth increases.
    const steps = [1, 1, 2, 1, 3, 1, 4, 5, 1, 8, 16, 1, 7, 2, 31, 1, 64, 3];
    for (const [i, count] of steps.entries()) {
      const leaves = leavesFrom(reference.size, count);
      if (i % 2 === 0) await harness.insertMany(leaves);
      else for (const leaf of leaves) await harness.insert(leaf);
      for (const leaf of leaves) reference.insert(leaf);
      expect(await harness.root(), `after ${reference.size} leaves`).to.equal(reference.root);
      expect(await harness.depth()).to.equal(BigInt(reference.depth));
      expect(await harness.ordinalOf(reference.root)).to.equal(BigInt(reference.size));
    }
  });

  it("accepts each root by the size of its tree only, and a batch's in-between sizes not at all", async function () {
    const { harness } = await loadFixture(deployHarness);
    const reference = createLeanIMT();
    const roots: bigint[] = [];
    for (const leaf of leavesFrom(0, 5)) {
      await harness.insert(leaf);
      reference.insert(leaf);
      roots.push(reference.root);
    }
    for (const [i, root] of roots.entries()) {
      expect(await harness.isAccepted(root, i + 1)).to.equal(true);
      expect(await harness.isAccepted(root, i + 2)).to.equal(false);
      expect(await harness.isAccepted(root, i)).to.equal(false);
    }
    await harness.insertMany(leavesFrom(5, 3));
    for (const leaf of leavesFrom(5, 3)) reference.insert(leaf);
    expect(await harness.isAccepted(reference.root, 8)).to.equal(true);
    for (const size of [6, 7]) {
      for (const root of [...roots, reference.root]) expect(await harness.isAccepted(root, size)).to.equal(false);
    }
    expect(await harness.isAccepted(0n, 8)).to.equal(false);
    expect(await harness.isAccepted(reference.root, 9)).to.equal(false);
  });

  it("forgets a root once 64 later roots and 128 blocks have passed", async function () {
    const { harness } = await loadFixture(deployHarness);
    const reference = createLeanIMT(leavesFrom(0, 1));
    await harness.insert(reference.root);
    const first = reference.root;
    // Spread over more than two lifetimes, so the inserts are no flood when the 65th evicts the first root.
    await harness.insertMany(leavesFrom(1, 40));
    await mine(3 * LIFETIME_BLOCKS);
    await harness.insertMany(leavesFrom(41, HISTORY - 41));
    expect(await harness.isAccepted(first, 1), "64 roots: still in the ring").to.equal(true);
    await harness.insert(leavesFrom(HISTORY, 1)[0]!);
    expect(await harness.isAccepted(first, 1)).to.equal(false);
    expect(await harness.ordinalOf(first)).to.equal(0n);
  });

  it("keeps a root a flood of inserts pushed out of the ring for 128 blocks after it left", async function () {
    const { harness } = await loadFixture(deployHarness);
    const roots: bigint[] = [];
    const reference = createLeanIMT();
    for (const leaf of leavesFrom(0, HISTORY + 3)) {
      await harness.insert(leaf);
      reference.insert(leaf);
      roots.push(reference.root);
    }
    // The roots of 1, 2 and 3 leaves left the ring within a few blocks of being recorded.
    for (const size of [1, 2, 3]) {
      expect(await harness.isAccepted(roots[size - 1]!, size), `root of ${size}`).to.equal(true);
      expect(await harness.ordinalOf(roots[size - 1]!)).to.equal(BigInt(size));
      expect(await harness.isAccepted(roots[size - 1]!, size + HISTORY)).to.equal(false);
    }
    await mine(LIFETIME_BLOCKS);
    for (const size of [1, 2, 3]) expect(await harness.isAccepted(roots[size - 1]!, size)).to.equal(false);
    expect(await harness.isAccepted(roots[3]!, 4), "still one of the last 64").to.equal(true);
  });

  it("rejects an empty batch, a batch over 64 leaves, and a zero or out-of-field leaf", async function () {
    const { harness } = await loadFixture(deployHarness);
    await expect(harness.insertMany([])).to.be.revertedWithCustomError(harness, "BatchSizeOutOfRange");
    await expect(harness.insertMany(leavesFrom(0, HISTORY + 1))).to.be.revertedWithCustomError(harness, "BatchSizeOutOfRange");
    await expect(harness.insertMany([1n, 0n])).to.be.revertedWithCustomError(harness, "LeafCannotBeZero");
    await expect(harness.insert(2n ** 254n)).to.be.revertedWithCustomError(harness, "LeafGreaterThanSnarkScalarField");
  });
});

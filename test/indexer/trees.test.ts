import { expect } from "chai";
import { createLeanIMT, hash1, packLeaves, rootOfWitness } from "../../sdk/index.js";
import { TreeLeavesSchema } from "../../indexer/api.js";
import { IndexedTree } from "../../indexer/trees.js";

const leaves = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => hash1(BigInt(from + i)));

describe("IndexedTree", function () {
  it("has the root of the SDK's LeanIMT, 0 while empty", function () {
    expect(IndexedTree.of([]).root).to.equal(0n);
    expect(IndexedTree.of(leaves(0, 7)).root).to.equal(createLeanIMT(leaves(0, 7)).root);
  });

  it("keeps its leaves packed as served: extended by appends, carried by a copy, each copy on its own", function () {
    const tree = IndexedTree.of(leaves(0, 5));
    expect(tree.packedLeaves(0)).to.equal(packLeaves(leaves(0, 5)));
    tree.append(leaves(5, 9));
    expect(tree.packedLeaves(0)).to.equal(packLeaves(leaves(0, 9)));
    expect(tree.packedLeaves(7)).to.equal(packLeaves(leaves(7, 9)));
    expect(tree.packedLeaves(9)).to.equal("");
    const copy = tree.copy();
    copy.append(leaves(9, 10));
    expect(copy.packedLeaves(8)).to.equal(packLeaves(leaves(8, 10)));
    expect(tree.packedLeaves(0)).to.equal(packLeaves(leaves(0, 9)));
  });

  it("builds a tree in chunks to the same root", async function () {
    const many = leaves(0, 2_100);
    expect((await IndexedTree.build(many)).root).to.equal(createLeanIMT(many).root);
  });

  it("gives a witness that recomputes the root for every leaf, and none for a stranger", function () {
    const tree = IndexedTree.of(leaves(0, 9));
    for (const leaf of tree.leaves) expect(rootOfWitness(leaf, tree.witness(leaf)!)).to.equal(tree.root);
    expect(tree.witness(hash1(999n))).to.equal(undefined);
  });

  it("finds a leaf appended before or after its first lookup", function () {
    const tree = IndexedTree.of(leaves(0, 3));
    tree.append(leaves(3, 5));
    expect(tree.indexOf(hash1(4n))).to.equal(4);
    tree.append([...leaves(5, 7), hash1(0n)]);
    expect(tree.indexOf(hash1(6n))).to.equal(6);
    expect(tree.indexOf(hash1(0n)), "a leaf appended twice: its first position").to.equal(0);
  });

  it("copies into an independent tree", function () {
    const tree = IndexedTree.of(leaves(0, 5));
    const copy = tree.copy();
    copy.append(leaves(5, 8));
    expect(tree.root).to.equal(createLeanIMT(leaves(0, 5)).root);
    expect(tree.indexOf(hash1(7n))).to.equal(undefined);
    expect(copy.indexOf(hash1(7n))).to.equal(7);
  });
});

describe("TreeLeavesSchema: the tree-leaves answer a client reads", function () {
  const answer = (leaves: string) => {
    const tree = { root: "1", depth: 17, size: 100_000, from: 0, leaves };
    return { state: tree, asp: tree };
  };

  it("reads the leaves of a pool of 100k deposits, and refuses leaves that are not whole or not lower-case hex", function () {
    const packed = "0123456789abcdef".repeat(4 * 100_000);
    expect(TreeLeavesSchema.parse(answer(packed)).state.leaves).to.have.length(64 * 100_000);
    for (const broken of [packed.slice(1), "A".repeat(64), "g".repeat(64)]) expect(TreeLeavesSchema.safeParse(answer(broken)).success, broken.slice(0, 8)).to.equal(false);
  });
});

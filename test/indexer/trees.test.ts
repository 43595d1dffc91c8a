import { expect } from "chai";
import { createLeanIMT, hash1, rootOfWitness } from "../../sdk/index.js";
import { IndexedTree } from "../../indexer/trees.js";

const leaves = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => hash1(BigInt(from + i)));

describe("IndexedTree", function () {
  it("has the root of the SDK's LeanIMT, 0 while empty", function () {
    expect(IndexedTree.of([]).root).to.equal(0n);
    expect(IndexedTree.of(leaves(0, 7)).root).to.equal(createLeanIMT(leaves(0, 7)).root);
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

  it("copies into an independent tree", function () {
    const tree = IndexedTree.of(leaves(0, 5));
    const copy = tree.copy();
    copy.append(leaves(5, 8));
    expect(tree.root).to.equal(createLeanIMT(leaves(0, 5)).root);
    expect(tree.indexOf(hash1(7n))).to.equal(undefined);
    expect(copy.indexOf(hash1(7n))).to.equal(7);
  });
});

import { expect } from "chai";
import { createLeanIMT, GrowingTree, hash1, MAX_TREE_DEPTH, merkleWitness, rootOfWitness } from "../../sdk/index.js";

const leaves = (n: number) => Array.from({ length: n }, (_, i) => hash1(BigInt(i + 1)));

describe("LeanIMT witness padding", function () {
  it("recomputes the tree root from every leaf of trees of 1 to 17 leaves", function () {
    for (let size = 1; size <= 17; size++) {
      const tree = createLeanIMT(leaves(size));
      for (let index = 0; index < size; index++) {
        const witness = merkleWitness(tree, index);
        expect(witness.siblings).to.have.length(MAX_TREE_DEPTH);
        expect(witness.depth).to.equal(tree.depth);
        expect(rootOfWitness(tree.leaves[index]!, witness), `size ${size}, leaf ${index}`).to.equal(tree.root);
      }
    }
  });

  it("puts a zero sibling at the levels where LeanIMT promotes the node", function () {
    // 5 leaves: leaf 4 has no sibling at levels 0 and 1 and is hashed only at the top level.
    const tree = createLeanIMT(leaves(5));
    const witness = merkleWitness(tree, 4);
    expect(witness.siblings.slice(0, 3).map((s) => s !== 0n)).to.deep.equal([false, false, true]);
    expect(witness.siblings.slice(3).every((s) => s === 0n)).to.equal(true);
  });

  it("refuses a tree deeper than the circuit supports", function () {
    const tree = createLeanIMT(leaves(9));
    expect(() => merkleWitness(tree, 0, 3)).to.throw(RangeError, /exceeds/);
  });
});

describe("GrowingTree: leaf lists served one after another", function () {
  const fresh = (list: bigint[]) => createLeanIMT(list);
  const same = (grown: ReturnType<GrowingTree["of"]>, list: bigint[]) => {
    expect(grown.size).to.equal(list.length);
    expect(grown.depth).to.equal(fresh(list).depth);
    if (list.length > 0) expect(grown.root).to.equal(fresh(list).root);
    for (const index of list.length === 0 ? [] : [0, list.length - 1]) {
      expect(merkleWitness(grown, index)).to.deep.equal(merkleWitness(fresh(list), index));
    }
  };

  it("extends the last tree by the leaves added since, across depth changes, and gives the fresh tree's root and paths", function () {
    const growing = new GrowingTree();
    const all = leaves(40);
    for (const size of [0, 1, 2, 3, 5, 8, 8, 17, 33, 40]) same(growing.of(all.slice(0, size)), all.slice(0, size));
  });

  it("builds afresh a list that does not extend the last one: a leaf removed (an ASP revocation) or a shorter list", function () {
    const growing = new GrowingTree();
    const all = leaves(20);
    growing.of(all);
    const revoked = [...all.slice(0, 7), ...all.slice(8)];
    same(growing.of(revoked), revoked);
    same(growing.of(all.slice(0, 5)), all.slice(0, 5));
    same(growing.of(all), all);
  });
});

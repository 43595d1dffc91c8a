import { expect } from "chai";
import { createLeanIMT, hash1, MAX_TREE_DEPTH, merkleWitness, rootOfWitness } from "../../sdk/index.js";

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

import { expect } from "chai";
import { CHUNK_LEAVES, createLeanIMT, hash1 } from "../../sdk/index.js";
import { SavedTree } from "../../indexer/saved-tree.js";
import { SqliteIndexerStore } from "../../indexer/store/sqlite-store.js";
import { IndexedTree } from "../../indexer/trees.js";

const leaves = (from: number, to: number, salt = 0n) => Array.from({ length: to - from }, (_, i) => hash1(BigInt(from + i) + salt));

describe("SavedTree: a tree saved by complete chunks as it grows", function () {
  let store: SqliteIndexerStore;
  const saved = async () => (await store.treeChunks("state")).map((bytes) => Buffer.from(bytes).toString("hex"));
  const chunksOf = (tree: IndexedTree) => Array.from({ length: tree.chunkCount }, (_, i) => tree.chunkBytes(i).toString("hex"));

  beforeEach(function () {
    store = new SqliteIndexerStore(":memory:");
  });
  afterEach(async function () {
    await store.close();
  });

  it("saves each chunk once it is complete, through appends and copies", async function () {
    const savedTree = new SavedTree(store, "state");
    const tree = await savedTree.build(leaves(0, 100));
    expect(await saved()).to.deep.equal([]);
    tree.append(leaves(100, CHUNK_LEAVES + 1));
    await savedTree.save(tree);
    expect(await saved()).to.deep.equal(chunksOf(tree));
    const copy = tree.copy();
    copy.append(leaves(CHUNK_LEAVES + 1, 2 * CHUNK_LEAVES));
    await savedTree.save(copy);
    expect(await saved()).to.have.length(2);
    expect(await saved()).to.deep.equal(chunksOf(copy));
  });

  it("replaces the chunks from the first one whose leaves changed, and drops those past a shorter tree", async function () {
    const all = leaves(0, 3 * CHUNK_LEAVES);
    const savedTree = new SavedTree(store, "state");
    await savedTree.build(all);
    const before = await saved();
    expect(before).to.have.length(3);

    // One leaf of chunk 1 left (an ASP exclusion): chunks 1 and 2 are made again from the tree built without it.
    const without = all.filter((_, i) => i !== CHUNK_LEAVES + 3);
    const rebuilt = await savedTree.build(without);
    expect(rebuilt.root).to.equal(createLeanIMT(without).root);
    const after = await saved();
    expect(after).to.deep.equal(chunksOf(rebuilt));
    expect(after).to.have.length(2);
    expect(after[0]).to.equal(before[0]);
    expect(after[1]).to.not.equal(before[1]);

    // Another tree than the one saved last (not built through it) is compared leaf by leaf: chunk 1 differs.
    const replaced = [...all.slice(0, CHUNK_LEAVES + 1), ...leaves(0, CHUNK_LEAVES, 1n)];
    const other = await IndexedTree.build(replaced);
    await savedTree.save(other);
    expect(await saved()).to.deep.equal(chunksOf(other));
  });
});

import { CHUNK_LEAVES } from "../sdk/index.js";
import type { IndexerStore, TreeName } from "./store/indexer-store.js";
import { IndexedTree } from "./trees.js";

/**
 * One of the indexer's trees, saved in the store by chunks (sdk/tree/lean-tree.ts) as it grows: a restart reads
 * back every saved chunk that still holds the tree's leaves and hashes only the leaves after them (fewer than a
 * chunk when nothing changed). A chunk made stale (a reorg dropped its leaves, an ASP exclusion moved labels) is
 * found by that check, hashed again and replaced.
 */
export class SavedTree {
  /** The leaves the saved chunks were made from (a prefix of them), how many chunks, and how many the store holds. */
  private saved: { leaves: readonly bigint[]; chunks: number; rows: number } = { leaves: [], chunks: 0, rows: 0 };

  constructor(
    private readonly store: IndexerStore,
    private readonly name: TreeName,
  ) {}

  /** The tree of `leaves`, its saved chunks read back where they hold these leaves; saves those it had to hash. */
  async build(leaves: readonly bigint[]): Promise<IndexedTree> {
    const chunks = await this.store.treeChunks(this.name);
    const { tree, reused } = await IndexedTree.buildFrom(leaves, chunks);
    this.saved = { leaves: tree.leaves, chunks: reused, rows: chunks.length };
    await this.save(tree);
    return tree;
  }

  /** Saves the complete chunks of `tree` the store does not hold (after appends, or a tree built again). */
  async save(tree: IndexedTree): Promise<void> {
    const from = this.firstUnsaved(tree.leaves);
    if (from === tree.chunkCount && from === this.saved.rows) return;
    const chunks = Array.from({ length: tree.chunkCount - from }, (_, i) => tree.chunkBytes(from + i));
    await this.store.saveTreeChunks(this.name, from, chunks);
    this.saved = { leaves: tree.leaves, chunks: tree.chunkCount, rows: tree.chunkCount };
  }

  /** The first chunk of `leaves` the store does not hold as they are now. */
  private firstUnsaved(leaves: readonly bigint[]): number {
    const { leaves: saved, chunks } = this.saved;
    const held = Math.min(chunks, Math.floor(leaves.length / CHUNK_LEAVES));
    // The same array only ever grew (a tree appends in place): its saved chunks hold.
    if (leaves === saved) return held;
    for (let i = 0; i < held * CHUNK_LEAVES; i++) if (leaves[i] !== saved[i]) return Math.floor(i / CHUNK_LEAVES);
    return held;
  }
}

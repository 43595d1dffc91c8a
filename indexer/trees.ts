import { LeanTree, PACKED_LEAF_CHARS, packLeaves, type MerkleWitness } from "../sdk/index.js";

/**
 * A LeanIMT (the pool's and the circuit's tree) with a leaf-to-index map, so a witness costs no scan, and its
 * leaves kept packed as the tree-leaves route serves them, so that a request prints no leaf. Used for the state
 * tree (commitments) and the ASP tree (approved labels).
 */
export class IndexedTree {
  /** Each leaf's first position; made on first request (a restart builds none), then extended with the tree. */
  private positions?: Map<bigint, number>;
  /** Every leaf as 64 hex characters, in order; made on first request, then extended with the tree. */
  private packed?: string;

  private constructor(
    private readonly tree: LeanTree,
    packed?: string,
  ) {
    this.packed = packed;
  }

  static of(leaves: bigint[]): IndexedTree {
    const tree = LeanTree.empty();
    tree.insertMany(leaves);
    return new IndexedTree(tree);
  }

  /** The tree of `leaves`, hashed natively when the native prover is built, else in chunks that leave the HTTP API free. */
  static async build(leaves: bigint[]): Promise<IndexedTree> {
    return new IndexedTree(await LeanTree.build(leaves));
  }

  /** As build, with the nodes of the chunks of `chunks` that still hold these leaves read back (LeanTree.buildFrom). */
  static async buildFrom(leaves: readonly bigint[], chunks: readonly Uint8Array[]): Promise<{ tree: IndexedTree; reused: number }> {
    const { tree, reused } = await LeanTree.buildFrom(leaves, chunks);
    return { tree: new IndexedTree(tree), reused };
  }

  get size(): number {
    return this.tree.size;
  }

  /** The root, 0 while the tree is empty (as the pool's currentRoot and the entrypoint's latestRoot). */
  get root(): bigint {
    return this.tree.root;
  }

  /** The depth the circuit and the entrypoint read with the root (0 for one leaf or none). */
  get depth(): number {
    return this.tree.depth;
  }

  /** The root of the tree of the first `size` leaves (LeanTree.rootAt). */
  rootAt(size: number): bigint {
    return this.tree.rootAt(size);
  }

  get leaves(): readonly bigint[] {
    return this.tree.leaves;
  }

  get chunkCount(): number {
    return this.tree.chunkCount;
  }

  chunkBytes(index: number): Buffer {
    return this.tree.chunkBytes(index);
  }

  append(leaves: bigint[]): void {
    if (leaves.length === 0) return;
    const first = this.tree.size;
    this.tree.insertMany(leaves);
    if (this.positions !== undefined) remember(this.positions, leaves, first);
    if (this.packed !== undefined) this.packed += packLeaves(leaves);
  }

  /** The leaves from position `from` on, packed (64 hex characters each); from the cache, nothing printed again. */
  packedLeaves(from: number): string {
    this.packed ??= packLeaves(this.tree.leaves);
    return from === 0 ? this.packed : this.packed.slice(from * PACKED_LEAF_CHARS);
  }

  /** The circuit-form path of `leaf` (its first occurrence), undefined when it is not a leaf. */
  witness(leaf: bigint): MerkleWitness | undefined {
    const index = this.indexOf(leaf);
    return index === undefined ? undefined : this.tree.witness(index);
  }

  indexOf(leaf: bigint): number | undefined {
    this.positions ??= remember(new Map(), this.tree.leaves, 0);
    return this.positions.get(leaf);
  }

  /** An independent copy, without hashing or packing again (its positions made again on request). */
  copy(): IndexedTree {
    return new IndexedTree(this.tree.copy(), this.packed);
  }
}

/** Adds the position of each of `leaves` (the first at `first`) that `positions` does not hold yet. */
function remember(positions: Map<bigint, number>, leaves: readonly bigint[], first: number): Map<bigint, number> {
  leaves.forEach((leaf, i) => {
    if (!positions.has(leaf)) positions.set(leaf, first + i);
  });
  return positions;
}

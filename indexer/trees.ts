import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { LeanIMT } from "@zk-kit/lean-imt";
import { createLeanIMT, merkleWitness, nodeHash, type MerkleWitness } from "../sdk/index.js";

/** Leaves hashed between two yields to the event loop while a big tree is built. */
const BUILD_CHUNK = 2_048;

/**
 * A LeanIMT (the pool's and the circuit's tree) with a leaf-to-index map, so a witness costs no scan. Used for the
 * state tree (commitments) and the ASP tree (approved labels).
 */
export class IndexedTree {
  private readonly positions = new Map<bigint, number>();

  private constructor(private readonly tree: LeanIMT<bigint>) {
    tree.leaves.forEach((leaf, index) => this.remember(leaf, index));
  }

  static of(leaves: bigint[]): IndexedTree {
    return new IndexedTree(createLeanIMT(leaves));
  }

  /** The tree of `leaves`, built in chunks so that a big rebuild does not stall the HTTP API meanwhile. */
  static async build(leaves: bigint[]): Promise<IndexedTree> {
    const tree = IndexedTree.of([]);
    for (let start = 0; start < leaves.length; start += BUILD_CHUNK) {
      tree.append(leaves.slice(start, start + BUILD_CHUNK));
      await yieldToEventLoop();
    }
    return tree;
  }

  get size(): number {
    return this.tree.size;
  }

  /** The root, 0 while the tree is empty (as the pool's currentRoot and the entrypoint's latestRoot). */
  get root(): bigint {
    return this.tree.size === 0 ? 0n : this.tree.root;
  }

  /** The depth the circuit and the entrypoint read with the root (0 for one leaf or none). */
  get depth(): number {
    return this.tree.depth;
  }

  get leaves(): bigint[] {
    return this.tree.leaves;
  }

  append(leaves: bigint[]): void {
    if (leaves.length === 0) return;
    const first = this.tree.size;
    this.tree.insertMany(leaves);
    leaves.forEach((leaf, i) => this.remember(leaf, first + i));
  }

  /** The circuit-form path of `leaf` (its first occurrence), undefined when it is not a leaf. */
  witness(leaf: bigint): MerkleWitness | undefined {
    const index = this.positions.get(leaf);
    return index === undefined ? undefined : merkleWitness(this.tree, index);
  }

  indexOf(leaf: bigint): number | undefined {
    return this.positions.get(leaf);
  }

  /** An independent copy; export/import copies the nodes without hashing again. */
  copy(): IndexedTree {
    return new IndexedTree(LeanIMT.import(nodeHash, this.tree.export()));
  }

  private remember(leaf: bigint, index: number): void {
    if (!this.positions.has(leaf)) this.positions.set(leaf, index);
  }
}

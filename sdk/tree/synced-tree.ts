import { LeanTree } from "./lean-tree.js";
import { unpackLeaves } from "./packed-leaves.js";

/**
 * Leaves appended in JavaScript (about 0.1 ms a hash) beyond which a tree is built again in one call, natively
 * when it can be (about 25 times faster a hash): when they are more than this and a sixteenth of the tree.
 */
const MAX_JS_APPEND = 256;

/**
 * An agent's copy of one of the facilitator's trees, kept from payment to payment (and across restarts, through
 * `toBytes`): it asks only for the leaves after those it has (`fetched`), and hashes only up to the size a quote
 * names. A served slice that does not line up with what it has (the tree was rebuilt: an ASP revocation, a reorg)
 * makes it start again from the slice; a root that does not match the quote makes the caller `reset` it.
 */
export class SyncedTree {
  /** The hashed part: the first tree.size leaves. */
  private tree = LeanTree.empty();
  /** Leaves fetched after the hashed ones, not hashed yet. */
  private pending: bigint[] = [];

  /** Leaves held: the position to ask the facilitator for leaves from. */
  get fetched(): number {
    return this.tree.size + this.pending.length;
  }

  /** Takes a served slice: `packed` leaves from position `from` (at most `fetched`) on. */
  receive(from: number, packed: string): void {
    if (from > this.fetched) throw new RangeError(`a slice from leaf ${from} does not follow the ${this.fetched} leaves held`);
    const leaves = unpackLeaves(packed);
    if (from < this.tree.size) {
      this.pending = [...this.tree.leaves.slice(0, from), ...leaves];
      this.tree = LeanTree.empty();
    } else {
      this.pending = [...this.pending.slice(0, from - this.tree.size), ...leaves];
    }
  }

  /** The tree of the first `size` leaves, undefined when fewer are held. */
  async treeOf(size: number): Promise<LeanTree | undefined> {
    if (size > this.fetched) return undefined;
    const appended = size - this.tree.size;
    if (appended < 0 || (appended > MAX_JS_APPEND && appended * 16 > this.tree.size)) {
      const leaves = [...this.tree.leaves, ...this.pending];
      this.tree = await LeanTree.build(leaves.slice(0, size));
      this.pending = leaves.slice(size);
    } else {
      this.tree.insertMany(this.pending.splice(0, appended));
    }
    return this.tree;
  }

  /** Forgets every leaf: the next request asks for all of them. */
  reset(): void {
    this.tree = LeanTree.empty();
    this.pending = [];
  }

  /** The hashed tree, for `fromBytes` (the agent's tree file). */
  toBytes(): { size: number; nodes: Buffer } {
    return { size: this.tree.size, nodes: this.tree.toBytes() };
  }

  /** A tree `toBytes` wrote; an empty one when the bytes do not hold a tree of `size` leaves. */
  static fromBytes(size: number, nodes: Uint8Array): SyncedTree {
    const synced = new SyncedTree();
    synced.tree = LeanTree.fromBytes(nodes, size) ?? LeanTree.empty();
    return synced;
  }
}

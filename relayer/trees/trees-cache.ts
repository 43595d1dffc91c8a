import type { TreeLeaves, TreeLeavesQuery } from "../../indexer/api.js";
import type { IndexerClient } from "../../indexer/client.js";
import { PACKED_LEAF_CHARS } from "../../sdk/index.js";

/** A trees answer as JSON bytes in parts (the leaves are slices of the cache, not copies), and its length. */
export interface TreesBody {
  parts: Buffer[];
  byteLength: number;
}

type TreeName = "state" | "asp";
type ServedTree = TreeLeaves[TreeName];

/** The indexer answered a refresh with leaves that do not follow the cached ones: nothing of it is taken. */
export class TreesAnswerMismatch extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TreesAnswerMismatch";
  }
}

/**
 * The relayer's copy of both trees the trees route serves (docs/api.md 4.10): each tree's shape and its leaves
 * packed as the route serves them. Every trees request first brings it up to date with one indexer request for the
 * leaves after those it holds (naming the root they make, so that a tree rebuilt since is sent whole, however far
 * it grew), then is answered from it by slicing. Requests that arrive while an indexer request is under way share
 * the next one: none is answered with trees older than an indexer answer begun after it arrived, and the agent's
 * trees are at least as new as its quote.
 */
export class TreesCache {
  private readonly trees = { state: new PackedTree(), asp: new PackedTree() };
  /** The indexer request under way. */
  private running?: Promise<void>;
  /** The one that starts when it ends, shared by the requests that arrived meanwhile. */
  private queued?: Promise<void>;

  constructor(private readonly indexer: Pick<IndexerClient, "treeLeaves" | "treeLeavesJson">) {}

  /** The answer to a trees request; the indexer's errors as IndexerClient throws them. */
  async answer(query: TreeLeavesQuery): Promise<TreesBody> {
    await this.refreshed();
    const { state, asp } = this.trees;
    const stateFrom = state.startFor(query.stateFrom, query.stateFromRoot);
    const aspFrom = asp.startFor(query.aspFrom, query.aspFromRoot);
    // A root for a position inside a tree only the indexer can check (the cache holds no inner nodes): it answers.
    if (stateFrom === undefined || aspFrom === undefined) {
      const json = await this.indexer.treeLeavesJson(query);
      return bodyOf([Buffer.from(json.buffer, json.byteOffset, json.byteLength)]);
    }
    return bodyOf([Buffer.from('{"state":'), ...state.sliceJson(stateFrom), Buffer.from(',"asp":'), ...asp.sliceJson(aspFrom), Buffer.from("}")]);
  }

  /** Resolves once an indexer answer begun after this call is in the cache. */
  private refreshed(): Promise<void> {
    if (this.running === undefined) return this.refresh();
    this.queued ??= this.running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.queued = undefined;
        // Begun after every request that waited here arrived, whether by this queue or by a request since.
        return this.running ?? this.refresh();
      });
    return this.queued;
  }

  private refresh(): Promise<void> {
    const { state, asp } = this.trees;
    const run = this.indexer
      .treeLeaves({ stateFrom: state.size, stateFromRoot: state.root, aspFrom: asp.size, aspFromRoot: asp.root })
      .then((answer) => {
        state.check(answer.state, "state");
        asp.check(answer.asp, "ASP");
        state.take(answer.state);
        asp.take(answer.asp);
      })
      .finally(() => {
        if (this.running === run) this.running = undefined;
      });
    this.running = run;
    return run;
  }
}

/** One tree: its shape and its leaves packed, 64 hex characters (bytes) a leaf, in a buffer grown by doubling. */
class PackedTree {
  root = 0n;
  depth = 0;
  size = 0;
  /**
   * The packed leaves in its first size * 64 bytes, room for more after them. Bytes below that are never written
   * again (answers being sent still read them): a rebuilt tree gets a buffer of its own.
   */
  private bytes = Buffer.alloc(0);

  /** Where to answer a request for the leaves from `from` on: from 0 when the tree was rebuilt since; undefined when only the indexer can tell. */
  startFor(from: number, fromRoot: bigint | undefined): number | undefined {
    if (from > this.size || from === 0) return 0;
    if (fromRoot === undefined) return from;
    if (from === this.size) return fromRoot === this.root ? from : 0;
    return undefined;
  }

  /** The JSON of the tree with its leaves from `from` on, the leaves a slice of the cache. */
  sliceJson(from: number): Buffer[] {
    const head = `{"root":"${this.root}","depth":${this.depth},"size":${this.size},"from":${from},"leaves":"`;
    return [Buffer.from(head), this.bytes.subarray(from * PACKED_LEAF_CHARS, this.size * PACKED_LEAF_CHARS), Buffer.from('"}')];
  }

  /** Refuses an answer to a refresh that neither follows the leaves held nor starts again from 0. */
  check(answer: ServedTree, name: string): void {
    const leaves = answer.leaves.length / PACKED_LEAF_CHARS;
    if ((answer.from !== 0 && answer.from !== this.size) || answer.from + leaves !== answer.size) {
      throw new TreesAnswerMismatch(
        `the indexer answered the ${name} tree's ${leaves} leaves from ${answer.from} of ${answer.size}, asked for those after the ${this.size} held`,
      );
    }
  }

  /** Takes a checked answer: its leaves appended, or the tree replaced when they start from 0. */
  take(answer: ServedTree): void {
    const at = answer.from * PACKED_LEAF_CHARS;
    const end = at + answer.leaves.length;
    if (end > this.bytes.length || at < this.size * PACKED_LEAF_CHARS) {
      const grown = Buffer.allocUnsafe(end > this.bytes.length ? Math.max(end, 2 * this.bytes.length) : this.bytes.length);
      this.bytes.copy(grown, 0, 0, at);
      this.bytes = grown;
    }
    this.bytes.write(answer.leaves, at, "latin1");
    this.root = answer.root;
    this.depth = answer.depth;
    this.size = answer.size;
  }
}

function bodyOf(parts: Buffer[]): TreesBody {
  return { parts, byteLength: parts.reduce((sum, part) => sum + part.byteLength, 0) };
}

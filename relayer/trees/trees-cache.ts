import type { TreeLeaves, TreeLeavesQuery } from "../../indexer/api.js";
import type { IndexerClient } from "../../indexer/client.js";
import { LeanTree, PACKED_LEAF_CHARS, unpackLeaves } from "../../sdk/index.js";

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
 * The relayer's copy of both trees the trees route serves (docs/api.md 4.10): each tree's shape, its leaves packed as
 * the route serves them, and its nodes, with which it judges the root a request names for any position itself. Every
 * trees request first brings it up to date with one indexer request for the leaves after those it holds (naming the
 * root they make, so that a tree rebuilt since is sent whole, however far it grew), then is answered from it by
 * slicing: whatever a request names, it costs the indexer no more than that shared request. Requests that arrive while
 * an indexer request is under way share the next one: none is answered with trees older than an indexer answer begun
 * after it arrived, and the agent's trees are at least as new as its quote.
 */
export class TreesCache {
  private readonly trees = { state: new CachedTree(), asp: new CachedTree() };
  /** The indexer request under way. */
  private running?: Promise<void>;
  /** The one that starts when it ends, shared by the requests that arrived meanwhile. */
  private queued?: Promise<void>;

  constructor(private readonly indexer: Pick<IndexerClient, "treeLeaves">) {}

  /**
   * How many bytes the answer to `query` has in the copy as it stands, without bringing it up to date: what the
   * route's bandwidth budget is charged before anything is fetched (the refresh adds only the leaves since).
   */
  sizeNow(query: TreeLeavesQuery): number {
    return this.cut(query).byteLength;
  }

  /** The answer to a trees request, from the copy once up to date; the indexer's errors as IndexerClient throws them. */
  async answer(query: TreeLeavesQuery): Promise<TreesBody> {
    await this.refreshed();
    return this.cut(query);
  }

  private cut(query: TreeLeavesQuery): TreesBody {
    const { state, asp } = this.trees;
    const stateFrom = state.startFor(query.stateFrom, query.stateFromRoot);
    const aspFrom = asp.startFor(query.aspFrom, query.aspFromRoot);
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
      .then(async (answer) => {
        // Both trees' nodes first, then both taken at once: a request never sees one tree of one answer and one of another.
        const nodes = await Promise.all([state.nodesAfter(answer.state, "state"), asp.nodesAfter(answer.asp, "ASP")]).catch((error: unknown) => {
          // Nodes may have grown by a part of the answer: the next refresh fetches both trees whole.
          state.reset();
          asp.reset();
          throw error;
        });
        state.take(answer.state, nodes[0]);
        asp.take(answer.asp, nodes[1]);
      })
      .finally(() => {
        if (this.running === run) this.running = undefined;
      });
    this.running = run;
    return run;
  }
}

/**
 * One tree: its shape, its leaves packed, 64 hex characters (bytes) a leaf, in a buffer grown by doubling, and its
 * nodes (a LeanTree: the root of any prefix in at most one hash a level).
 */
class CachedTree {
  root = 0n;
  depth = 0;
  size = 0;
  private nodes = LeanTree.empty();
  /**
   * The packed leaves in its first size * 64 bytes, room for more after them. Bytes below that are never written
   * again (answers being sent still read them): a rebuilt tree gets a buffer of its own.
   */
  private bytes = Buffer.alloc(0);

  /**
   * Where to answer a request for the leaves from `from` on: from 0 when the tree was rebuilt since the caller's
   * leaves (it has fewer, or its first `from` make another root than `fromRoot`), as the indexer answers.
   */
  startFor(from: number, fromRoot: bigint | undefined): number {
    if (from > this.size || from === 0) return 0;
    if (fromRoot === undefined) return from;
    return this.nodes.rootAt(from) === fromRoot ? from : 0;
  }

  /** The JSON of the tree with its leaves from `from` on, the leaves a slice of the cache. */
  sliceJson(from: number): Buffer[] {
    const head = `{"root":"${this.root}","depth":${this.depth},"size":${this.size},"from":${from},"leaves":"`;
    return [Buffer.from(head), this.bytes.subarray(from * PACKED_LEAF_CHARS, this.size * PACKED_LEAF_CHARS), Buffer.from('"}')];
  }

  /**
   * The nodes of the tree an answer to a refresh makes: the leaves held and those after them, or the answer's alone
   * when they start from 0 (hashed natively when the native prover is built). Refuses an answer that neither follows
   * the leaves held nor starts again from 0, or whose leaves do not make the root it names.
   */
  async nodesAfter(answer: ServedTree, name: string): Promise<LeanTree> {
    const leaves = answer.leaves.length / PACKED_LEAF_CHARS;
    if ((answer.from !== 0 && answer.from !== this.size) || answer.from + leaves !== answer.size) {
      throw new TreesAnswerMismatch(
        `the indexer answered the ${name} tree's ${leaves} leaves from ${answer.from} of ${answer.size}, asked for those after the ${this.size} held`,
      );
    }
    let nodes: LeanTree;
    if (answer.from === 0) {
      nodes = await LeanTree.build(unpackLeaves(answer.leaves));
    } else {
      // The copy's own nodes grow in place: a request meanwhile reads only prefixes they already held.
      nodes = this.nodes;
      nodes.insertMany(unpackLeaves(answer.leaves));
    }
    if (nodes.root !== answer.root) {
      throw new TreesAnswerMismatch(`the indexer's ${name} leaves make the root ${nodes.root}, not the ${answer.root} it names`);
    }
    return nodes;
  }

  /** Forgets the tree, so that the next refresh fetches it whole; bytes an answer may still read are left as they are. */
  reset(): void {
    this.root = 0n;
    this.depth = 0;
    this.size = 0;
    this.nodes = LeanTree.empty();
    this.bytes = Buffer.alloc(0);
  }

  /** Takes a checked answer and its nodes: its leaves appended, or the tree replaced when they start from 0. */
  take(answer: ServedTree, nodes: LeanTree): void {
    const at = answer.from * PACKED_LEAF_CHARS;
    const end = at + answer.leaves.length;
    if (end > this.bytes.length || at < this.size * PACKED_LEAF_CHARS) {
      const grown = Buffer.allocUnsafe(end > this.bytes.length ? Math.max(end, 2 * this.bytes.length) : this.bytes.length);
      this.bytes.copy(grown, 0, 0, at);
      this.bytes = grown;
    }
    this.bytes.write(answer.leaves, at, "latin1");
    this.nodes = nodes;
    this.root = answer.root;
    this.depth = answer.depth;
    this.size = answer.size;
  }
}

function bodyOf(parts: Buffer[]): TreesBody {
  return { parts, byteLength: parts.reduce((sum, part) => sum + part.byteLength, 0) };
}

/** A block the indexer has read, by number and hash: how a reorg is detected. */
export interface BlockRef {
  number: number;
  hash: string;
}

/** Where an event was emitted. */
export interface EventLocation {
  blockNumber: number;
  txHash: string;
  logIndex: number;
}

export interface LeafRecord extends EventLocation {
  leafIndex: number;
  commitment: bigint;
}

export interface DepositRecord extends EventLocation {
  label: bigint;
  depositor: string;
  commitment: bigint;
  value: bigint;
  precommitment: bigint;
}

/** The decision in force on a label, as the ASP curator keeps it: whether approved, and if not which list and why. */
export type AspVerdict = Pick<AspDecision, "approved" | "list" | "reason">;

/** A deposit as the ASP curator holds it: what it screens and counts, and the decision in force on its label. */
export interface ScreenedDepositRecord {
  label: bigint;
  depositor: string;
  value: bigint;
  /** The latest decision on the label, null before the first. */
  verdict: AspVerdict | null;
}

export type SpendKind = "withdrawal" | "ragequit";

export interface SpentNullifierRecord extends EventLocation {
  nullifierHash: bigint;
  kind: SpendKind;
  /** The label of the note taken back; null for a withdrawal, whose label stays private. */
  label: bigint | null;
}

/** An ASP root the entrypoint recorded (RootUpdated). */
export interface AspRootRecord extends EventLocation {
  root: bigint;
  cid: string;
  timestamp: number;
}

/** One entry of the ASP audit trail: why the curator approved or excluded a label. Holds no secret. */
export interface AspDecision {
  label: bigint;
  depositor: string;
  approved: boolean;
  /** The list that flagged the depositor, null when approved. */
  list: string | null;
  /** Human-readable justification, including the list entry's comment when one flagged the depositor. */
  reason: string;
  /** SHA-256 of the screening lists the decision was made with. */
  listsDigest: string;
  /** ISO 8601 time of the decision. */
  decidedAt: string;
}

/** What one sync batch read from the chain and decided, written in one transaction. */
export interface SyncBatch {
  /** The last block of the batch: the cursor afterwards. */
  cursor: BlockRef;
  /** Blocks of the batch to remember for reorg detection (blocks with events, and the cursor). */
  blocks: BlockRef[];
  leaves: LeafRecord[];
  deposits: DepositRecord[];
  spentNullifiers: SpentNullifierRecord[];
  aspRoots: AspRootRecord[];
  aspDecisions: AspDecision[];
}

/** The indexer's trees: the state tree of commitments and the ASP tree of approved labels. */
export type TreeName = "state" | "asp";

/** A store bound to one deployment was asked to serve another (IndexerStore.bindDeployment). */
export class DeploymentMismatchError extends Error {
  constructor(
    readonly boundDeployment: string,
    readonly requestedDeployment: string,
  ) {
    super(`the indexer database belongs to deployment ${boundDeployment}, not ${requestedDeployment}`);
    this.name = "DeploymentMismatchError";
  }
}

/**
 * Persistent state of the indexer. The embedded implementation is SQLite (sqlite-store.ts); PostgreSQL (pg-store.ts)
 * serves the same interface, which is why every method is async. Writes that belong together (a batch, a
 * rewind) are one transaction each.
 */
export interface IndexerStore {
  /**
   * Binds the store to one deployment (e.g. "31337:0xPool"): an empty store records it, a store of another
   * deployment throws DeploymentMismatchError, so a database is never mixed across chains or pools.
   */
  bindDeployment(deployment: string): Promise<void>;
  /** The last block fully read, or null before the first batch. */
  cursor(): Promise<BlockRef | null>;
  applyBatch(batch: SyncBatch): Promise<void>;
  /**
   * Drops everything read after `block` (a reorg) and makes it the cursor; null drops everything, so the next
   * sync starts again from the deployment block.
   */
  rewindTo(block: BlockRef | null): Promise<void>;
  /** Remembered blocks at or below `belowOrAt`, newest first. */
  knownBlocks(belowOrAt: number, limit: number): Promise<BlockRef[]>;
  /** All commitments of the state tree, by leaf index. */
  leaves(): Promise<bigint[]>;
  /** Every deposit with the decision in force on its label, in the order the pool made them. */
  screenedDeposits(): Promise<ScreenedDepositRecord[]>;
  deposit(label: bigint): Promise<DepositRecord | null>;
  spentNullifier(nullifierHash: bigint): Promise<SpentNullifierRecord | null>;
  /** Labels of notes taken back by ragequit. */
  ragequitLabels(): Promise<bigint[]>;
  /** The latest ASP root recorded on chain up to the cursor, or null when none. */
  latestAspRoot(): Promise<AspRootRecord | null>;
  appendAspDecisions(decisions: AspDecision[]): Promise<void>;
  /** Every decision ever made about `label`, oldest first. */
  aspAuditTrail(label: bigint): Promise<AspDecision[]>;
  /**
   * The saved chunks of `tree` (sdk/tree/lean-tree.ts: each chunk's nodes, as LeanTree.chunkBytes writes them),
   * from chunk 0 on. What they hold is checked by whoever reads them back: a chunk may be stale.
   */
  treeChunks(tree: TreeName): Promise<Uint8Array[]>;
  /** Replaces the saved chunks of `tree` from chunk `from` on (those after the last one given are dropped). */
  saveTreeChunks(tree: TreeName, from: number, chunks: readonly Uint8Array[]): Promise<void>;
  close(): Promise<void>;
}

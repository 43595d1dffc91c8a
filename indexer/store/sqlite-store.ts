import type { DatabaseSync } from "node:sqlite";
import { openSqlite } from "../../lib/sqlite.js";
import {
  DeploymentMismatchError,
  type AspDecision,
  type AspRootRecord,
  type BlockRef,
  type DepositRecord,
  type IndexerStore,
  type ScreenedDepositRecord,
  type SpentNullifierRecord,
  type SyncBatch,
  type TreeName,
} from "./indexer-store.js";
import { big, contiguousChunks, text, toAspRoot, toBlock, toDecision, toDeposit, toScreenedDeposit, toSpentNullifier } from "./rows.js";

// Field elements and uint256 values are canonical decimal TEXT: SQLite integers stop at 2^63.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cursor (id INTEGER PRIMARY KEY CHECK (id = 1), number INTEGER NOT NULL, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blocks (number INTEGER PRIMARY KEY, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leaves (
  leaf_index INTEGER PRIMARY KEY, commitment TEXT NOT NULL,
  block_number INTEGER NOT NULL, tx_hash TEXT NOT NULL, log_index INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS leaves_by_commitment ON leaves (commitment);
CREATE TABLE IF NOT EXISTS deposits (
  label TEXT PRIMARY KEY, depositor TEXT NOT NULL, commitment TEXT NOT NULL, value TEXT NOT NULL,
  precommitment TEXT NOT NULL, block_number INTEGER NOT NULL, tx_hash TEXT NOT NULL, log_index INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS deposits_by_position ON deposits (block_number, log_index);
CREATE TABLE IF NOT EXISTS spent_nullifiers (
  nullifier_hash TEXT PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('withdrawal', 'ragequit')), label TEXT,
  block_number INTEGER NOT NULL, tx_hash TEXT NOT NULL, log_index INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS asp_roots (
  root TEXT NOT NULL, cid TEXT NOT NULL, timestamp INTEGER NOT NULL,
  block_number INTEGER NOT NULL, tx_hash TEXT NOT NULL, log_index INTEGER NOT NULL,
  PRIMARY KEY (block_number, log_index));
CREATE TABLE IF NOT EXISTS asp_decisions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT NOT NULL, depositor TEXT NOT NULL,
  approved INTEGER NOT NULL, list TEXT, reason TEXT NOT NULL, lists_digest TEXT NOT NULL, decided_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS asp_decisions_by_label ON asp_decisions (label, seq);
CREATE TABLE IF NOT EXISTS tree_chunks (
  tree TEXT NOT NULL CHECK (tree IN ('state', 'asp')), chunk INTEGER NOT NULL, nodes BLOB NOT NULL,
  PRIMARY KEY (tree, chunk));
`;

/** The embedded store: one SQLite file through node:sqlite, no native build. */
export class SqliteIndexerStore implements IndexerStore {
  private readonly db: DatabaseSync;

  /** Opens (creating when needed) the database at `file`; ":memory:" for a throwaway store. */
  constructor(file: string) {
    this.db = openSqlite(file, `PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;\n${SCHEMA}`);
  }

  async bindDeployment(deployment: string): Promise<void> {
    const row = this.db.prepare("SELECT value FROM meta WHERE key = 'deployment'").get();
    if (row === undefined) {
      this.db.prepare("INSERT INTO meta (key, value) VALUES ('deployment', ?)").run(deployment);
    } else if (text(row, "value") !== deployment) {
      throw new DeploymentMismatchError(text(row, "value"), deployment);
    }
  }

  async cursor(): Promise<BlockRef | null> {
    const row = this.db.prepare("SELECT number, hash FROM cursor WHERE id = 1").get();
    return row === undefined ? null : toBlock(row);
  }

  async applyBatch(batch: SyncBatch): Promise<void> {
    this.transaction(() => {
      const block = this.db.prepare("INSERT OR REPLACE INTO blocks (number, hash) VALUES (?, ?)");
      for (const { number, hash } of batch.blocks) block.run(number, hash);

      const leaf = this.db.prepare(
        "INSERT INTO leaves (leaf_index, commitment, block_number, tx_hash, log_index) VALUES (?, ?, ?, ?, ?)",
      );
      for (const l of batch.leaves) leaf.run(l.leafIndex, l.commitment.toString(), l.blockNumber, l.txHash, l.logIndex);

      const deposit = this.db.prepare(
        `INSERT INTO deposits (label, depositor, commitment, value, precommitment, block_number, tx_hash, log_index)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const d of batch.deposits) {
        deposit.run(
          d.label.toString(),
          d.depositor,
          d.commitment.toString(),
          d.value.toString(),
          d.precommitment.toString(),
          d.blockNumber,
          d.txHash,
          d.logIndex,
        );
      }

      const spent = this.db.prepare(
        `INSERT INTO spent_nullifiers (nullifier_hash, kind, label, block_number, tx_hash, log_index)
         VALUES (?, ?, ?, ?, ?, ?)`,
      );
      for (const s of batch.spentNullifiers) {
        spent.run(s.nullifierHash.toString(), s.kind, s.label?.toString() ?? null, s.blockNumber, s.txHash, s.logIndex);
      }

      const aspRoot = this.db.prepare(
        "INSERT INTO asp_roots (root, cid, timestamp, block_number, tx_hash, log_index) VALUES (?, ?, ?, ?, ?, ?)",
      );
      for (const r of batch.aspRoots) aspRoot.run(r.root.toString(), r.cid, r.timestamp, r.blockNumber, r.txHash, r.logIndex);

      this.insertDecisions(batch.aspDecisions);
      this.db
        .prepare("INSERT OR REPLACE INTO cursor (id, number, hash) VALUES (1, ?, ?)")
        .run(batch.cursor.number, batch.cursor.hash);
    });
  }

  async rewindTo(block: BlockRef | null): Promise<void> {
    const after = block?.number ?? -1;
    this.transaction(() => {
      this.db
        .prepare("DELETE FROM asp_decisions WHERE label IN (SELECT label FROM deposits WHERE block_number > ?)")
        .run(after);
      for (const table of ["deposits", "leaves", "spent_nullifiers", "asp_roots"]) {
        this.db.prepare(`DELETE FROM ${table} WHERE block_number > ?`).run(after);
      }
      this.db.prepare("DELETE FROM blocks WHERE number > ?").run(after);
      if (block === null) {
        this.db.prepare("DELETE FROM cursor").run();
      } else {
        this.db.prepare("INSERT OR REPLACE INTO cursor (id, number, hash) VALUES (1, ?, ?)").run(block.number, block.hash);
      }
    });
  }

  async knownBlocks(belowOrAt: number, limit: number): Promise<BlockRef[]> {
    return this.db
      .prepare("SELECT number, hash FROM blocks WHERE number <= ? ORDER BY number DESC LIMIT ?")
      .all(belowOrAt, limit)
      .map(toBlock);
  }

  async leaves(): Promise<bigint[]> {
    return this.arrays("SELECT commitment FROM leaves ORDER BY leaf_index").map(([commitment]) => BigInt(String(commitment)));
  }

  async screenedDeposits(): Promise<ScreenedDepositRecord[]> {
    return this.arrays(
      `SELECT d.label, d.depositor, d.value, a.approved, a.list, a.reason FROM deposits d
       LEFT JOIN asp_decisions a ON a.seq = (SELECT MAX(seq) FROM asp_decisions WHERE label = d.label)
       ORDER BY d.block_number, d.log_index`,
    ).map(toScreenedDeposit);
  }

  async deposit(label: bigint): Promise<DepositRecord | null> {
    const row = this.db.prepare("SELECT * FROM deposits WHERE label = ?").get(label.toString());
    return row === undefined ? null : toDeposit(row);
  }

  async spentNullifier(nullifierHash: bigint): Promise<SpentNullifierRecord | null> {
    const row = this.db
      .prepare("SELECT * FROM spent_nullifiers WHERE nullifier_hash = ?")
      .get(nullifierHash.toString());
    return row === undefined ? null : toSpentNullifier(row);
  }

  async ragequitLabels(): Promise<bigint[]> {
    return this.db
      .prepare("SELECT label FROM spent_nullifiers WHERE kind = 'ragequit'")
      .all()
      .map((row) => big(row, "label"));
  }

  async latestAspRoot(): Promise<AspRootRecord | null> {
    const row = this.db.prepare("SELECT * FROM asp_roots ORDER BY block_number DESC, log_index DESC LIMIT 1").get();
    return row === undefined ? null : toAspRoot(row);
  }

  async appendAspDecisions(decisions: AspDecision[]): Promise<void> {
    this.transaction(() => this.insertDecisions(decisions));
  }

  async aspAuditTrail(label: bigint): Promise<AspDecision[]> {
    return this.db.prepare("SELECT * FROM asp_decisions WHERE label = ? ORDER BY seq").all(label.toString()).map(toDecision);
  }

  async treeChunks(tree: TreeName): Promise<Uint8Array[]> {
    const rows = this.db.prepare("SELECT chunk, nodes FROM tree_chunks WHERE tree = ? ORDER BY chunk").all(tree);
    return contiguousChunks(rows);
  }

  async saveTreeChunks(tree: TreeName, from: number, chunks: readonly Uint8Array[]): Promise<void> {
    this.transaction(() => {
      this.db.prepare("DELETE FROM tree_chunks WHERE tree = ? AND chunk >= ?").run(tree, from);
      const insert = this.db.prepare("INSERT INTO tree_chunks (tree, chunk, nodes) VALUES (?, ?, ?)");
      chunks.forEach((nodes, i) => insert.run(tree, from + i, nodes));
    });
  }

  async close(): Promise<void> {
    this.db.close();
  }

  private insertDecisions(decisions: AspDecision[]): void {
    const insert = this.db.prepare(
      `INSERT INTO asp_decisions (label, depositor, approved, list, reason, lists_digest, decided_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    for (const d of decisions) {
      insert.run(d.label.toString(), d.depositor, d.approved ? 1 : 0, d.list, d.reason, d.listsDigest, d.decidedAt);
    }
  }

  /** The rows of `sql` as arrays of column values: a row object each costs several times more for many rows. */
  private arrays(sql: string): unknown[][] {
    const statement = this.db.prepare(sql);
    statement.setReturnArrays(true);
    return statement.all() as unknown[] as unknown[][];
  }

  private transaction(work: () => void): void {
    this.db.exec("BEGIN IMMEDIATE");
    try {
      work();
      this.db.exec("COMMIT");
    } catch (error) {
      this.db.exec("ROLLBACK");
      throw error;
    }
  }
}

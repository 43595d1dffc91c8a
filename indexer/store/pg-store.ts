import type pg from "pg";
import { inTransaction, openDatabase, type PostgresOptions } from "../../lib/postgres.js";
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
import { big, contiguousChunks, text, toAspRoot, toBlock, toDecision, toDeposit, toScreenedDeposit, toSpentNullifier, type Row } from "./rows.js";

// Field elements and uint256 values are NUMERIC(78): exact up to 10^78 > 2^256, read back as decimal strings.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cursor (id INTEGER PRIMARY KEY CHECK (id = 1), number BIGINT NOT NULL, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blocks (number BIGINT PRIMARY KEY, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leaves (
  leaf_index INTEGER PRIMARY KEY, commitment NUMERIC(78) NOT NULL,
  block_number BIGINT NOT NULL, tx_hash TEXT NOT NULL, log_index INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS deposits (
  label NUMERIC(78) PRIMARY KEY, depositor TEXT NOT NULL, commitment NUMERIC(78) NOT NULL, value NUMERIC(78) NOT NULL,
  precommitment NUMERIC(78) NOT NULL, block_number BIGINT NOT NULL, tx_hash TEXT NOT NULL, log_index INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS deposits_by_position ON deposits (block_number, log_index);
CREATE TABLE IF NOT EXISTS spent_nullifiers (
  nullifier_hash NUMERIC(78) PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('withdrawal', 'ragequit')),
  label NUMERIC(78), block_number BIGINT NOT NULL, tx_hash TEXT NOT NULL, log_index INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS asp_roots (
  root NUMERIC(78) NOT NULL, cid TEXT NOT NULL, timestamp BIGINT NOT NULL,
  block_number BIGINT NOT NULL, tx_hash TEXT NOT NULL, log_index INTEGER NOT NULL,
  PRIMARY KEY (block_number, log_index));
CREATE TABLE IF NOT EXISTS asp_decisions (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, label NUMERIC(78) NOT NULL, depositor TEXT NOT NULL,
  approved BOOLEAN NOT NULL, list TEXT, reason TEXT NOT NULL, lists_digest TEXT NOT NULL, decided_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS asp_decisions_by_label ON asp_decisions (label, seq);
CREATE TABLE IF NOT EXISTS tree_chunks (
  tree TEXT NOT NULL CHECK (tree IN ('state', 'asp')), chunk INTEGER NOT NULL, nodes BYTEA NOT NULL,
  PRIMARY KEY (tree, chunk));
`;

/** Tables that hold what one block range brought; a rewind deletes their rows past the kept block. */
const EVENT_TABLES = ["deposits", "leaves", "spent_nullifiers", "asp_roots"] as const;

/**
 * Inserts `records` with one statement however many there are: `sql` selects from unnest() of one array
 * parameter per column, and `columns` pick each column's value from a record.
 */
async function insertAll<T>(client: pg.PoolClient, sql: string, records: T[], columns: ((record: T) => unknown)[]) {
  if (records.length === 0) return;
  await client.query(sql, columns.map((column) => records.map(column)));
}

/** The indexer's state in PostgreSQL (`INDEXER_DATABASE_URL`); the same behaviour as the SQLite file. */
export class PgIndexerStore implements IndexerStore {
  private constructor(private readonly pool: pg.Pool) {}

  /** Connects and creates the tables when missing; safe when several processes start at once. */
  static async open(options: PostgresOptions): Promise<PgIndexerStore> {
    return new PgIndexerStore(await openDatabase(options, "x402-indexer-schema", SCHEMA));
  }

  async bindDeployment(deployment: string): Promise<void> {
    // One statement records the deployment or returns the one already recorded, even with two processes at once.
    const row = await this.one(
      `INSERT INTO meta (key, value) VALUES ('deployment', $1)
       ON CONFLICT (key) DO UPDATE SET value = meta.value RETURNING value`,
      [deployment],
    );
    if (text(row, "value") !== deployment) throw new DeploymentMismatchError(text(row, "value"), deployment);
  }

  async cursor(): Promise<BlockRef | null> {
    const row = await this.first("SELECT number, hash FROM cursor WHERE id = 1");
    return row === undefined ? null : toBlock(row);
  }

  async applyBatch(batch: SyncBatch): Promise<void> {
    // A block can be listed twice (it carried events and ends the batch); the last hash wins, as in SQLite.
    const blocks = [...new Map(batch.blocks.map((block) => [block.number, block.hash])).entries()];
    await inTransaction(this.pool, async (client) => {
      await insertAll(
        client,
        `INSERT INTO blocks (number, hash) SELECT * FROM unnest($1::bigint[], $2::text[])
         ON CONFLICT (number) DO UPDATE SET hash = excluded.hash`,
        blocks,
        [([number]) => number, ([, hash]) => hash],
      );
      await insertAll(
        client,
        `INSERT INTO leaves (leaf_index, commitment, block_number, tx_hash, log_index)
         SELECT * FROM unnest($1::integer[], $2::numeric[], $3::bigint[], $4::text[], $5::integer[])`,
        batch.leaves,
        [(l) => l.leafIndex, (l) => l.commitment.toString(), (l) => l.blockNumber, (l) => l.txHash, (l) => l.logIndex],
      );
      await insertAll(
        client,
        `INSERT INTO deposits (label, depositor, commitment, value, precommitment, block_number, tx_hash, log_index)
         SELECT * FROM unnest($1::numeric[], $2::text[], $3::numeric[], $4::numeric[], $5::numeric[], $6::bigint[],
           $7::text[], $8::integer[])`,
        batch.deposits,
        [
          (d) => d.label.toString(),
          (d) => d.depositor,
          (d) => d.commitment.toString(),
          (d) => d.value.toString(),
          (d) => d.precommitment.toString(),
          (d) => d.blockNumber,
          (d) => d.txHash,
          (d) => d.logIndex,
        ],
      );
      await insertAll(
        client,
        `INSERT INTO spent_nullifiers (nullifier_hash, kind, label, block_number, tx_hash, log_index)
         SELECT * FROM unnest($1::numeric[], $2::text[], $3::numeric[], $4::bigint[], $5::text[], $6::integer[])`,
        batch.spentNullifiers,
        [
          (s) => s.nullifierHash.toString(),
          (s) => s.kind,
          (s) => s.label?.toString() ?? null,
          (s) => s.blockNumber,
          (s) => s.txHash,
          (s) => s.logIndex,
        ],
      );
      await insertAll(
        client,
        `INSERT INTO asp_roots (root, cid, timestamp, block_number, tx_hash, log_index)
         SELECT * FROM unnest($1::numeric[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::integer[])`,
        batch.aspRoots,
        [
          (r) => r.root.toString(),
          (r) => r.cid,
          (r) => r.timestamp,
          (r) => r.blockNumber,
          (r) => r.txHash,
          (r) => r.logIndex,
        ],
      );
      await insertDecisions(client, batch.aspDecisions);
      await client.query(
        `INSERT INTO cursor (id, number, hash) VALUES (1, $1, $2)
         ON CONFLICT (id) DO UPDATE SET number = excluded.number, hash = excluded.hash`,
        [batch.cursor.number, batch.cursor.hash],
      );
    });
  }

  async rewindTo(block: BlockRef | null): Promise<void> {
    const after = block?.number ?? -1;
    await inTransaction(this.pool, async (client) => {
      await client.query(
        "DELETE FROM asp_decisions WHERE label IN (SELECT label FROM deposits WHERE block_number > $1)",
        [after],
      );
      for (const table of EVENT_TABLES) await client.query(`DELETE FROM ${table} WHERE block_number > $1`, [after]);
      await client.query("DELETE FROM blocks WHERE number > $1", [after]);
      if (block === null) {
        await client.query("DELETE FROM cursor");
      } else {
        await client.query(
          `INSERT INTO cursor (id, number, hash) VALUES (1, $1, $2)
           ON CONFLICT (id) DO UPDATE SET number = excluded.number, hash = excluded.hash`,
          [block.number, block.hash],
        );
      }
    });
  }

  async knownBlocks(belowOrAt: number, limit: number): Promise<BlockRef[]> {
    return (
      await this.all("SELECT number, hash FROM blocks WHERE number <= $1 ORDER BY number DESC LIMIT $2", [
        belowOrAt,
        limit,
      ])
    ).map(toBlock);
  }

  async leaves(): Promise<bigint[]> {
    const rows = await this.arrays("SELECT commitment FROM leaves ORDER BY leaf_index");
    return rows.map(([commitment]) => BigInt(String(commitment)));
  }

  async screenedDeposits(): Promise<ScreenedDepositRecord[]> {
    const rows = await this.arrays(
      `SELECT d.label, d.depositor, d.value, a.approved, a.list, a.reason FROM deposits d
       LEFT JOIN LATERAL (SELECT approved, list, reason FROM asp_decisions WHERE label = d.label ORDER BY seq DESC LIMIT 1) a ON true
       ORDER BY d.block_number, d.log_index`,
    );
    return rows.map(toScreenedDeposit);
  }

  async deposit(label: bigint): Promise<DepositRecord | null> {
    const row = await this.first("SELECT * FROM deposits WHERE label = $1", [label.toString()]);
    return row === undefined ? null : toDeposit(row);
  }

  async spentNullifier(nullifierHash: bigint): Promise<SpentNullifierRecord | null> {
    const row = await this.first("SELECT * FROM spent_nullifiers WHERE nullifier_hash = $1", [
      nullifierHash.toString(),
    ]);
    return row === undefined ? null : toSpentNullifier(row);
  }

  async ragequitLabels(): Promise<bigint[]> {
    return (await this.all("SELECT label FROM spent_nullifiers WHERE kind = 'ragequit'")).map((row) =>
      big(row, "label"),
    );
  }

  async latestAspRoot(): Promise<AspRootRecord | null> {
    const row = await this.first("SELECT * FROM asp_roots ORDER BY block_number DESC, log_index DESC LIMIT 1");
    return row === undefined ? null : toAspRoot(row);
  }

  async appendAspDecisions(decisions: AspDecision[]): Promise<void> {
    await inTransaction(this.pool, (client) => insertDecisions(client, decisions));
  }

  async aspAuditTrail(label: bigint): Promise<AspDecision[]> {
    return (await this.all("SELECT * FROM asp_decisions WHERE label = $1 ORDER BY seq", [label.toString()])).map(
      toDecision,
    );
  }

  async treeChunks(tree: TreeName): Promise<Uint8Array[]> {
    return contiguousChunks(await this.all("SELECT chunk, nodes FROM tree_chunks WHERE tree = $1 ORDER BY chunk", [tree]));
  }

  async saveTreeChunks(tree: TreeName, from: number, chunks: readonly Uint8Array[]): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      await client.query("DELETE FROM tree_chunks WHERE tree = $1 AND chunk >= $2", [tree, from]);
      await insertAll(
        client,
        "INSERT INTO tree_chunks (tree, chunk, nodes) SELECT * FROM unnest($1::text[], $2::integer[], $3::bytea[])",
        [...chunks.entries()],
        [() => tree, ([i]) => from + i, ([, nodes]) => Buffer.from(nodes.buffer, nodes.byteOffset, nodes.byteLength)],
      );
    });
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async all(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await this.pool.query<Row>(sql, params)).rows;
  }

  /** The rows of `sql` as arrays of column values: a row object each costs more for many rows. */
  private async arrays(sql: string): Promise<unknown[][]> {
    return (await this.pool.query<unknown[]>({ text: sql, rowMode: "array" })).rows;
  }

  private async first(sql: string, params: unknown[] = []): Promise<Row | undefined> {
    return (await this.all(sql, params))[0];
  }

  private async one(sql: string, params: unknown[]): Promise<Row> {
    const row = await this.first(sql, params);
    if (row === undefined) throw new Error(`expected a row from: ${sql}`);
    return row;
  }
}

async function insertDecisions(client: pg.PoolClient, decisions: AspDecision[]): Promise<void> {
  // seq must follow the list's order (the latest decision per label is in force), hence the ordinality.
  await insertAll(
    client,
    `INSERT INTO asp_decisions (label, depositor, approved, list, reason, lists_digest, decided_at)
     SELECT label, depositor, approved, list, reason, lists_digest, decided_at
     FROM unnest($1::numeric[], $2::text[], $3::boolean[], $4::text[], $5::text[], $6::text[], $7::text[])
       WITH ORDINALITY AS d (label, depositor, approved, list, reason, lists_digest, decided_at, position)
     ORDER BY position`,
    decisions,
    [
      (d) => d.label.toString(),
      (d) => d.depositor,
      (d) => d.approved,
      (d) => d.list,
      (d) => d.reason,
      (d) => d.listsDigest,
      (d) => d.decidedAt,
    ],
  );
}

import type {
  AspDecision,
  AspRootRecord,
  BlockRef,
  DepositRecord,
  ScreenedDepositRecord,
  SpendKind,
  SpentNullifierRecord,
} from "./indexer-store.js";

/**
 * A result row of either backend, column name to value as its driver returns it. Both store field elements and
 * amounts as decimal text (PostgreSQL's NUMERIC reads back as a string too); PostgreSQL's BIGINT reads back as a
 * string, SQLite's INTEGER as a number, so numbers go through Number().
 */
export type Row = Record<string, unknown>;

export const text = (row: Row, column: string): string => String(row[column]);
export const int = (row: Row, column: string): number => Number(row[column]);
export const big = (row: Row, column: string): bigint => BigInt(text(row, column));

/** The `nodes` of rows ordered by `chunk`, from chunk 0 up to the first one missing. */
export function contiguousChunks(rows: Row[]): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (const row of rows) {
    if (int(row, "chunk") !== chunks.length) break;
    chunks.push(row.nodes as Uint8Array);
  }
  return chunks;
}

/** SQLite has no boolean type and stores 0 or 1. */
const flag = (row: Row, column: string): boolean => row[column] === true || row[column] === 1;

const location = (row: Row) => ({
  blockNumber: int(row, "block_number"),
  txHash: text(row, "tx_hash"),
  logIndex: int(row, "log_index"),
});

export const toBlock = (row: Row): BlockRef => ({ number: int(row, "number"), hash: text(row, "hash") });

export const toDeposit = (row: Row): DepositRecord => ({
  label: big(row, "label"),
  depositor: text(row, "depositor"),
  commitment: big(row, "commitment"),
  value: big(row, "value"),
  precommitment: big(row, "precommitment"),
  ...location(row),
});

export const toSpentNullifier = (row: Row): SpentNullifierRecord => ({
  nullifierHash: big(row, "nullifier_hash"),
  kind: text(row, "kind") as SpendKind,
  label: row.label === null ? null : big(row, "label"),
  ...location(row),
});

export const toAspRoot = (row: Row): AspRootRecord => ({
  root: big(row, "root"),
  cid: text(row, "cid"),
  timestamp: int(row, "timestamp"),
  ...location(row),
});

/** A deposit from the values of label, depositor, value and its decision's approved, list and reason, in that order. */
export const toScreenedDeposit = ([label, depositor, value, approved, list, reason]: unknown[]): ScreenedDepositRecord => ({
  label: BigInt(String(label)),
  depositor: String(depositor),
  value: BigInt(String(value)),
  verdict:
    approved === null ? null : { approved: approved === true || approved === 1, list: list === null ? null : String(list), reason: String(reason) },
});

export const toDecision = (row: Row): AspDecision => ({
  label: big(row, "label"),
  depositor: text(row, "depositor"),
  approved: flag(row, "approved"),
  list: row.list === null ? null : text(row, "list"),
  reason: text(row, "reason"),
  listsDigest: text(row, "lists_digest"),
  decidedAt: text(row, "decided_at"),
});

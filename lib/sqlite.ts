import { mkdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";

/**
 * How long a statement waits for another connection's write lock on the file (a `sweep:payers` run, a backup)
 * before failing with SQLITE_BUSY. Statements are synchronous, so the wait holds the process's event loop.
 */
export const SQLITE_BUSY_TIMEOUT_MS = 5_000;

/**
 * Opens the SQLite database at `file` (":memory:" for a throwaway one), creating its folder when needed, and runs
 * `setup` on it: the store's pragmas and its `CREATE ... IF NOT EXISTS` schema.
 */
export function openSqlite(file: string, setup: string): DatabaseSync {
  if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
  const db = new DatabaseSync(file);
  // First, so that the setup's own writes wait for a writer too.
  db.exec(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  db.exec(setup);
  return db;
}

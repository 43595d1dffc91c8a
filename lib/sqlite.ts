import { mkdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";

/**
 * Opens the SQLite database at `file` (":memory:" for a throwaway one), creating its folder when needed, and runs
 * `setup` on it: the store's pragmas and its `CREATE ... IF NOT EXISTS` schema.
 */
export function openSqlite(file: string, setup: string): DatabaseSync {
  if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
  const db = new DatabaseSync(file);
  db.exec(setup);
  return db;
}

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";

/** Opens the file, takes its write lock, says so, holds it `holdMs`, then commits and exits. */
const HOLD_LOCK = `
const { DatabaseSync } = require("node:sqlite");
const db = new DatabaseSync(process.argv[1]);
db.exec("BEGIN IMMEDIATE");
console.log("locked");
setTimeout(() => { db.exec("COMMIT"); db.close(); }, Number(process.argv[2]));
`;

/**
 * Another process writing the SQLite file at `file` (as `sweep:payers` or a backup does), holding its write lock
 * for `holdMs`. Its own process, so the lock is held while this one's event loop waits inside SQLite.
 */
export async function holdSqliteWriteLock(file: string, holdMs: number): Promise<{ released: Promise<void> }> {
  const child = spawn(process.execPath, ["--no-warnings", "-e", HOLD_LOCK, file, String(holdMs)], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = once(child, "exit");
  const lines = createInterface({ input: child.stdout });
  await Promise.race([
    once(lines, "line"),
    exited.then(([code]) => {
      throw new Error(`the lock holder exited (${String(code)}) before locking ${file}`);
    }),
  ]);
  return {
    released: exited.then(([code]) => {
      if (code !== 0) throw new Error(`the lock holder exited with ${String(code)}`);
    }),
  };
}

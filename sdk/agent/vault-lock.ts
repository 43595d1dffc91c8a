import { randomBytes } from "node:crypto";
import { link, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";

/** The lock files this process holds, by absolute path: a lock naming this process's id is stale unless listed here. */
const held = new Set<string>();

/** A vault file's lock, held by one NoteVault of one process until `release`. */
export interface VaultLock {
  release(): Promise<void>;
}

/** Why the lock was not taken: a live process holds it; the message says what to do. */
export interface VaultLockRefused {
  refused: string;
}

/**
 * Takes `<file>.lock` for this process: created exclusively, holding this process's id and a random token. A lock
 * left by a process that is gone (its id names no live process on this machine, or names this process without
 * this process holding it: a restarted container reuses ids) is taken over; a live holder's is refused
 * (the answer says by whom). Taking over moves the stale file aside first and checks that it moved what it judged stale, so
 * two processes taking over one stale lock at once cannot both hold it.
 */
export async function lockVaultFile(file: string): Promise<VaultLock | VaultLockRefused> {
  const lockFile = `${path.resolve(file)}.lock`;
  const token = randomBytes(8).toString("hex");
  const mine = JSON.stringify({ pid: process.pid, token });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeFile(lockFile, mine, { flag: "wx", mode: 0o600 });
      held.add(lockFile);
      return { release: () => releaseLock(lockFile, mine) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = await readFile(lockFile, "utf8").catch(() => undefined);
    if (holder === undefined) continue;
    const pid = holderPidOf(holder);
    if (pid !== undefined && alive(pid, lockFile)) return refusal(lockFile, pid);
    await moveAsideIfUnchanged(lockFile, holder, token);
  }
  return refusal(lockFile, holderPidOf(await readFile(lockFile, "utf8").catch(() => "")));
}

function refusal(lockFile: string, pid: number | undefined): VaultLockRefused {
  if (pid === process.pid) return { refused: `the note vault is already open in this process (${lockFile}); close it first` };
  return {
    refused: `the note vault is in use by ${pid === undefined ? "another process" : `process ${pid}`} (${lockFile}): one process at a time holds a vault. If no process uses it, delete ${lockFile}.`,
  };
}

async function releaseLock(lockFile: string, mine: string): Promise<void> {
  held.delete(lockFile);
  if ((await readFile(lockFile, "utf8").catch(() => undefined)) === mine) await rm(lockFile, { force: true });
}

/** The holder's process id; undefined for a lock cut short (a crash between its creation and its write). */
function holderPidOf(content: string): number | undefined {
  try {
    const { pid } = JSON.parse(content) as { pid?: unknown };
    return Number.isSafeInteger(pid) && (pid as number) > 0 ? (pid as number) : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number, lockFile: string): boolean {
  if (pid === process.pid) return held.has(lockFile);
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: a live process of another user.
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** Moves the stale lock aside; when what moved is not `stale` (another process took it over meanwhile), puts it back. */
async function moveAsideIfUnchanged(lockFile: string, stale: string, token: string): Promise<void> {
  const aside = `${lockFile}.${token}.stale`;
  try {
    await rename(lockFile, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if ((await readFile(aside, "utf8")) !== stale) await link(aside, lockFile).catch(() => undefined);
  await rm(aside, { force: true });
}

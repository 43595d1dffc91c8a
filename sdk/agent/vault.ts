import { randomBytes } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import type { Provider } from "ethers";
import type { Note } from "../note/note.js";
import type { NoteRequest, NoteReservation, NoteStore, StoredPresentation } from "./note-reservation.js";
import { readPoolLogs, type PoolAddressBook, type ReadPoolLogsOptions } from "./pool-events.js";
import { followNote, type NoteChainStatus } from "./recovery.js";
import type { StoredTab, TabStore } from "./tab-record.js";
import { lockVaultFile, type VaultLock } from "./vault-lock.js";
import { decrypt, deriveKey, encrypt, NEW_VAULT_KDF, parseJson, VaultError, VaultFileSchema, writeAtomically, type StoredNote, type VaultFile } from "./vault-file.js";

export { VaultError, type VaultErrorCode } from "./vault-file.js";

/** A note kept in the vault, with whether it has been spent and whether a payment holds it. */
export interface VaultEntry {
  note: Note;
  spent: boolean;
  /**
   * Present while a payment holds the note (NoteVault.reserve), or while a spend of it whose outcome is unknown
   * waits for `reconcile`. `sentAt`: when the request that can spend it left (ms since the epoch); only that
   * part is kept on disk, so a note chosen by a payment that never sent anything is free again after a restart.
   */
  reserved?: { sentAt?: number; holdUntil?: number };
}


/**
 * How long a spend that may have left, and that the chain does not show, keeps its note reserved after a crash:
 * past a quote's life (60 s), the relayer's lease going stale (120 s) and its wait for a relay's inclusion (60 s).
 */
export const DEFAULT_SETTLE_WINDOW_MS = 10 * 60_000;

export interface ReconcileOptions extends ReadPoolLogsOptions {
  provider: Provider;
  addressBook: PoolAddressBook;
  /** A note unspent on chain whose spend left less than this long ago stays reserved. Default DEFAULT_SETTLE_WINDOW_MS. */
  settleWindowMs?: number;
}

/** What `reconcile` found of the notes whose spend's outcome was lost. */
export interface Reconciliation {
  /** Unspent on chain, sent longer than the settle window ago: free again. */
  released: Note[];
  /**
   * Spent on chain, marked spent with every note after them, and the note their spends led to (the change, followed
   * as recoverNotes follows it), saved free when `status` is `unspent`.
   */
  spent: { note: Note; latest: Note; status: NoteChainStatus }[];
  /** Unspent on chain, but their spend may still land: still reserved; a later reconcile settles them. */
  pending: Note[];
}


/**
 * Notes kept on disk under a passphrase: the whole list is one AES-256-GCM ciphertext under a key from
 * scrypt(passphrase, random salt), so the file holds no nullifier, secret or even value in clear. Every change
 * rewrites the file atomically (temporary file, fsync, rename) with a fresh IV.
 *
 * It is also the agent's wallet: `reserve` gives each payment a note no other payment holds, and the payment ends
 * the reservation (NoteReservation). One process at a time holds a vault: `create` and `open` take `<file>.lock`
 * (naming the process) and refuse with VAULT_LOCKED while a live process holds it; `close` gives it back, and a
 * lock left by a process that is gone is taken over.
 *
 * It keeps the agent's private tabs too (TabStore): each tab's voucher key spends the tab, so it is kept as the notes are.
 */
export class NoteVault implements NoteStore, TabStore {
  private writes: Promise<void> = Promise.resolve();
  /** The notes the payments of this process hold now, by commitment. */
  private readonly held = new Set<bigint>();
  /** Settled when a reservation ends or a note arrives: payments waiting for a note look again. */
  private readonly changed = new ChangeSignal();
  private closed = false;

  private constructor(
    private readonly file: string,
    private readonly kdf: VaultFile["kdf"],
    private readonly key: Buffer,
    private entries: StoredNote[],
    private tabs: StoredTab[],
    private readonly lock: VaultLock,
  ) {}

  /** Creates an empty vault at `file`; refuses to overwrite an existing file. */
  static async create(file: string, passphrase: string): Promise<NoteVault> {
    if (passphrase.length === 0) throw new RangeError("the vault passphrase must not be empty");
    if (await stat(file).then(() => true, () => false)) throw new VaultError("VAULT_EXISTS", `${file} already exists`);
    const kdf = { ...NEW_VAULT_KDF, salt: `0x${randomBytes(16).toString("hex")}` };
    const key = await deriveKey(passphrase, kdf);
    return withLock(file, async (lock) => {
      const vault = new NoteVault(file, kdf, key, [], [], lock);
      await vault.update(() => {});
      return vault;
    });
  }

  /** Opens the vault at `file`; a wrong passphrase is a VaultError with code WRONG_PASSPHRASE. */
  static async open(file: string, passphrase: string): Promise<NoteVault> {
    return withLock(file, async (lock) => {
      const text = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") throw new VaultError("VAULT_NOT_FOUND", `no note vault at ${file}`);
        throw error;
      });
      const parsed = VaultFileSchema.safeParse(parseJson(text));
      if (!parsed.success) throw new VaultError("CORRUPT_VAULT", `${file} is not a note vault`);
      const { kdf } = parsed.data;
      const key = await deriveKey(passphrase, kdf);
      const { entries, tabs } = decrypt(parsed.data, key);
      return new NoteVault(file, kdf, key, entries, tabs, lock);
    });
  }

  /** Waits for the writes under way, then gives the vault's lock back; the vault takes no change after. */
  async close(): Promise<void> {
    this.closed = true;
    await this.writes;
    await this.lock.release();
  }

  /** Every stored note with its spent flag and reservation, in the order they were saved. */
  async list(): Promise<VaultEntry[]> {
    await this.writes;
    return this.entries.map(({ note, spent, sentAt, holdUntil }) => {
      const reserved = this.held.has(note.commitment) || sentAt !== undefined;
      return { note: { ...note }, spent, ...(reserved && { reserved: { ...(sentAt !== undefined && { sentAt }), ...(holdUntil !== undefined && { holdUntil }) } }) };
    });
  }

  /** Stores `note` unspent; saving a note already stored changes nothing. */
  save(note: Note): Promise<void> {
    return this.update((entries) => storeFree(entries, note)).then(() => this.changed.settle());
  }

  /** Marks the note of `commitment` spent; a VaultError with code NOTE_NOT_FOUND when the vault lacks it. */
  markSpent(commitment: bigint): Promise<void> {
    return this.update((entries) => markSpentIn(entries, commitment));
  }

  async reserve({ atLeast, skip = new Set() }: NoteRequest): Promise<NoteReservation | undefined> {
    for (;;) {
      if (this.closed) throw new VaultError("VAULT_CLOSED", "the note vault is closed");
      const changed = this.changed.promise;
      const free = this.entries
        .filter(({ note, spent, sentAt }) => !spent && sentAt === undefined && !this.held.has(note.commitment) && note.value >= atLeast && !skip.has(note.commitment))
        .sort((a, b) => (a.note.value < b.note.value ? -1 : a.note.value > b.note.value ? 1 : 0));
      const [chosen] = free;
      if (chosen !== undefined) return this.hold(chosen.note);
      const mayServe = this.entries.some(({ note }) => this.held.has(note.commitment) && note.value >= atLeast);
      if (!mayServe) return undefined;
      await changed;
    }
  }

  async resume(request: string): Promise<{ reservation: NoteReservation; presentation: StoredPresentation; holdUntilMs: number } | undefined> {
    if (this.closed) throw new VaultError("VAULT_CLOSED", "the note vault is closed");
    await this.writes;
    const now = Date.now();
    const entry = this.entries.find(
      ({ note, spent, presentation, holdUntil }) => !spent && presentation?.request === request && (holdUntil ?? 0) > now && !this.held.has(note.commitment),
    );
    if (entry === undefined) return undefined;
    return { reservation: this.hold(entry.note), presentation: { ...entry.presentation!, headers: { ...entry.presentation!.headers } }, holdUntilMs: entry.holdUntil! };
  }

  /**
   * Settles from the chain the notes whose spend's outcome was lost (a crash after `sending`, or `unsettled`): a note
   * the chain shows spent is marked spent, and the note its spends led to is found as recoverNotes finds it (change
   * notes derived and checked against each Withdrawn event's commitment) and saved; one the chain shows unspent is
   * free again once its spend left more than `settleWindowMs` ago and its hold (a payment's window) ended, and stays
   * reserved until then. Reads the chain
   * only when such notes exist. Notes held by payments of this process in flight are left alone.
   */
  async reconcile(options: ReconcileOptions): Promise<Reconciliation> {
    const result: Reconciliation = { released: [], spent: [], pending: [] };
    const unsettled = (entry: StoredNote) => !entry.spent && entry.sentAt !== undefined && !this.held.has(entry.note.commitment);
    if (!this.entries.some(unsettled)) return result;
    const logs = await readPoolLogs(options.provider, options.addressBook, options);
    const window = options.settleWindowMs ?? DEFAULT_SETTLE_WINDOW_MS;
    const now = Date.now();
    await this.update((entries) => {
      for (const entry of entries.filter(unsettled)) {
        const { note, sentAt } = entry;
        const followed = followNote(logs, note);
        if (followed.history.length > 0) {
          for (const step of followed.history) if (step.kind !== "deposited") markSpentIn(entries, step.spentCommitment, { ifStored: true });
          if (followed.status === "unspent") storeFree(entries, followed.latest);
          result.spent.push({ note, latest: followed.latest, status: followed.status });
        } else if (now - sentAt! >= window && now >= (entry.holdUntil ?? 0)) {
          clearSend(entry);
          result.released.push(note);
        } else {
          result.pending.push(note);
        }
      }
    });
    this.changed.settle();
    return result;
  }

  /** `note`'s reservation for one payment: the note stays held until the payment ends it. */
  private hold(note: Note): NoteReservation {
    this.held.add(note.commitment);
    let ended = false;
    /** Ends the reservation once `change` (when there is one to write) is on disk; `then` runs before waiters look again. */
    const end = async (change: ((entries: StoredNote[]) => void) | undefined, then: () => void = () => {}) => {
      if (ended) throw new Error("this note's reservation has ended already");
      ended = true;
      try {
        if (change !== undefined) await this.update(change);
      } finally {
        // A failed write leaves the note as it was on disk: reserved with its sentAt, it waits for reconcile.
        this.held.delete(note.commitment);
        then();
        this.changed.settle();
      }
    };
    const entryOf = (entries: StoredNote[]) => entries.find((entry) => entry.note.commitment === note.commitment);
    return {
      note: { ...note },
      sending: (hold) =>
        this.update((entries) => {
          const entry = entryOf(entries);
          if (entry === undefined) return;
          entry.sentAt = Date.now();
          if (hold !== undefined) entry.holdUntil = hold.untilMs;
          if (hold?.presentation !== undefined) entry.presentation = hold.presentation;
        }),
      spent: (change) =>
        end((entries) => {
          markSpentIn(entries, note.commitment);
          if (change !== undefined && change.value > 0n) storeFree(entries, change);
        }),
      spentInto: async (change) => {
        let next: NoteReservation | undefined;
        await end(
          (entries) => {
            markSpentIn(entries, note.commitment);
            storeFree(entries, change);
          },
          () => {
            next = this.hold(change);
          },
        );
        return next!;
      },
      released: () =>
        end(
          entryOf(this.entries)?.sentAt === undefined
            ? undefined
            : (entries) => {
                const entry = entryOf(entries);
                if (entry !== undefined) clearSend(entry);
              },
        ),
      // The note keeps its sentAt on disk: reconcile settles it from the chain.
      unsettled: () => end(undefined),
    };
  }

  async tab(seller: string): Promise<StoredTab | undefined> {
    await this.writes;
    const tab = this.tabs.findLast((kept) => kept.seller === seller);
    return tab === undefined ? undefined : structuredClone(tab);
  }

  saveTab(tab: StoredTab): Promise<void> {
    // A tab of the same seller that never opened is dropped: no channel holds its deposit (tab-record.ts).
    const superseded = (kept: StoredTab) => kept.tabKey === tab.tabKey || (kept.seller === tab.seller && kept.opened === undefined);
    return this.update(() => {}, (tabs) => [...tabs.filter((kept) => !superseded(kept)), structuredClone(tab)]);
  }

  /** Applies `change` to a copy of the entries (and `changeTabs` to the tabs), writes it, and only then makes it the vault's state. */
  private update(change: (entries: StoredNote[]) => void, changeTabs: (tabs: StoredTab[]) => StoredTab[] = (tabs) => tabs): Promise<void> {
    const run = this.writes.then(async () => {
      if (this.closed) throw new VaultError("VAULT_CLOSED", "the note vault is closed");
      const entries = this.entries.map((entry) => ({ ...entry }));
      change(entries);
      const tabs = changeTabs(this.tabs);
      await writeAtomically(this.file, JSON.stringify(encrypt({ entries, tabs }, this.kdf, this.key), null, 2));
      this.entries = entries;
      this.tabs = tabs;
    });
    this.writes = run.catch(() => {});
    return run;
  }
}

/** Runs `open` holding the lock of `file`; gives the lock back when `open` fails. */
async function withLock(file: string, open: (lock: VaultLock) => Promise<NoteVault>): Promise<NoteVault> {
  const lock = await lockVaultFile(file);
  if ("refused" in lock) throw new VaultError("VAULT_LOCKED", lock.refused);
  try {
    return await open(lock);
  } catch (error) {
    await lock.release();
    throw error;
  }
}

/** Adds `note` unspent and free, unless it is stored already. */
function storeFree(entries: StoredNote[], note: Note): void {
  if (!entries.some((entry) => entry.note.commitment === note.commitment)) entries.push({ note: { ...note }, spent: false });
}

function markSpentIn(entries: StoredNote[], commitment: bigint, { ifStored = false } = {}): void {
  const entry = entries.find((candidate) => candidate.note.commitment === commitment);
  if (entry === undefined) {
    if (ifStored) return;
    throw new VaultError("NOTE_NOT_FOUND", `the vault holds no note with commitment ${commitment}`);
  }
  entry.spent = true;
  clearSend(entry);
}

/** The note's spend ended (spent, or known not to land): nothing of it is kept. */
function clearSend(entry: StoredNote): void {
  delete entry.sentAt;
  delete entry.holdUntil;
  delete entry.presentation;
}

/** A promise settled by the next `settle`, then renewed. */
class ChangeSignal {
  promise!: Promise<void>;
  private resolve!: () => void;

  constructor() {
    this.renew();
  }

  settle(): void {
    this.resolve();
    this.renew();
  }

  private renew(): void {
    this.promise = new Promise((resolve) => (this.resolve = resolve));
  }
}


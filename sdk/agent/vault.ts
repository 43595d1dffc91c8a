import { createCipheriv, createDecipheriv, randomBytes, scrypt, type ScryptOptions } from "node:crypto";
import { open, readFile, rename, rm, stat } from "node:fs/promises";
import { z } from "zod";
import { createNote, type Note } from "../note/note.js";
import { FieldElementSchema, HexSchema } from "../schema/primitives.js";

/** Why a vault operation failed; never carries a secret. */
export type VaultErrorCode =
  | "VAULT_EXISTS"
  | "VAULT_NOT_FOUND"
  | "WRONG_PASSPHRASE"
  | "CORRUPT_VAULT"
  | "NOTE_NOT_FOUND";

export class VaultError extends Error {
  constructor(
    readonly code: VaultErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "VaultError";
  }
}

/** A note kept in the vault, with whether it has been spent. */
export interface VaultEntry {
  note: Note;
  spent: boolean;
}

/** scrypt cost of new vaults: 2^15 x 8 x 128 bytes = 32 MiB and about 0.1 s per open. */
const NEW_VAULT_KDF = { name: "scrypt", N: 1 << 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const IV_LENGTH = 12;
/** GCM's full tag. Node accepts a tag as short as 4 bytes unless told its length, and a short tag is forgeable. */
const TAG_LENGTH = 16;

const VaultFileSchema = z
  .object({
    version: z.literal(1),
    // Bounded so that a crafted file cannot make opening it exhaust memory.
    kdf: z
      .object({
        name: z.literal("scrypt"),
        salt: HexSchema,
        N: z.number().int().min(2).max(1 << 20).refine((n) => (n & (n - 1)) === 0, "must be a power of 2"),
        r: z.number().int().min(1).max(16),
        p: z.number().int().min(1).max(4),
      })
      .strict(),
    cipher: z.literal("aes-256-gcm"),
    iv: HexSchema,
    tag: HexSchema.refine((tag) => tag.length === 2 + 2 * TAG_LENGTH, `must be a ${TAG_LENGTH}-byte tag`),
    ciphertext: HexSchema,
  })
  .strict();
type VaultFile = z.infer<typeof VaultFileSchema>;

const VaultContentSchema = z
  .object({
    notes: z.array(
      z
        .object({
          nullifier: FieldElementSchema,
          secret: FieldElementSchema,
          value: FieldElementSchema,
          label: FieldElementSchema,
          commitment: FieldElementSchema,
          spent: z.boolean(),
        })
        .strict(),
    ),
  })
  .strict();

/**
 * Notes kept on disk under a passphrase: the whole list is one AES-256-GCM ciphertext under a key from
 * scrypt(passphrase, random salt), so the file holds no nullifier, secret or even value in clear. Every change
 * rewrites the file atomically (temporary file, fsync, rename) with a fresh IV. One process per file: the
 * vault keeps its notes in memory and serialises its own writes, but does not lock the file.
 */
export class NoteVault {
  private writes: Promise<void> = Promise.resolve();

  private constructor(
    private readonly file: string,
    private readonly kdf: VaultFile["kdf"],
    private readonly key: Buffer,
    private entries: VaultEntry[],
  ) {}

  /** Creates an empty vault at `file`; refuses to overwrite an existing file. */
  static async create(file: string, passphrase: string): Promise<NoteVault> {
    if (passphrase.length === 0) throw new RangeError("the vault passphrase must not be empty");
    if (await stat(file).then(() => true, () => false)) throw new VaultError("VAULT_EXISTS", `${file} already exists`);
    const kdf = { ...NEW_VAULT_KDF, salt: `0x${randomBytes(16).toString("hex")}` };
    const vault = new NoteVault(file, kdf, await deriveKey(passphrase, kdf), []);
    await vault.update(() => {});
    return vault;
  }

  /** Opens the vault at `file`; a wrong passphrase is a VaultError with code WRONG_PASSPHRASE. */
  static async open(file: string, passphrase: string): Promise<NoteVault> {
    const text = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") throw new VaultError("VAULT_NOT_FOUND", `no note vault at ${file}`);
      throw error;
    });
    const parsed = VaultFileSchema.safeParse(parseJson(text));
    if (!parsed.success) throw new VaultError("CORRUPT_VAULT", `${file} is not a note vault`);
    const { kdf } = parsed.data;
    const key = await deriveKey(passphrase, kdf);
    return new NoteVault(file, kdf, key, decrypt(parsed.data, key));
  }

  /** Every stored note with its spent flag, in the order they were saved. */
  async list(): Promise<VaultEntry[]> {
    await this.writes.catch(() => {});
    return this.entries.map(({ note, spent }) => ({ note: { ...note }, spent }));
  }

  /** Stores `note` unspent; saving a note already stored changes nothing. */
  save(note: Note): Promise<void> {
    return this.update((entries) => {
      const stored = entries.some((entry) => entry.note.commitment === note.commitment);
      if (!stored) entries.push({ note: { ...note }, spent: false });
    });
  }

  /** Marks the note of `commitment` spent; a VaultError with code NOTE_NOT_FOUND when the vault lacks it. */
  markSpent(commitment: bigint): Promise<void> {
    return this.update((entries) => {
      const entry = entries.find((candidate) => candidate.note.commitment === commitment);
      if (entry === undefined) {
        throw new VaultError("NOTE_NOT_FOUND", `the vault holds no note with commitment ${commitment}`);
      }
      entry.spent = true;
    });
  }

  /** Applies `change` to a copy of the entries, writes it, and only then makes it the vault's state. */
  private update(change: (entries: VaultEntry[]) => void): Promise<void> {
    const run = this.writes.then(async () => {
      const entries = this.entries.map((entry) => ({ ...entry }));
      change(entries);
      await writeAtomically(this.file, JSON.stringify(encrypt(entries, this.kdf, this.key), null, 2));
      this.entries = entries;
    });
    this.writes = run.catch(() => {});
    return run;
  }
}

function deriveKey(passphrase: string, kdf: VaultFile["kdf"]): Promise<Buffer> {
  const { N, r, p } = kdf;
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r };
  return new Promise((resolve, reject) =>
    scrypt(passphrase.normalize("NFKC"), Buffer.from(kdf.salt.slice(2), "hex"), KEY_LENGTH, options, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
}

function encrypt(entries: VaultEntry[], kdf: VaultFile["kdf"], key: Buffer): VaultFile {
  const notes = entries.map(({ note, spent }) => ({
    nullifier: note.nullifier.toString(),
    secret: note.secret.toString(),
    value: note.value.toString(),
    label: note.label.toString(),
    commitment: note.commitment.toString(),
    spent,
  }));
  const iv = randomBytes(IV_LENGTH);
  const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_LENGTH });
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify({ notes }), "utf8"), cipher.final()]);
  const tag = cipher.getAuthTag();
  return { version: 1, kdf, cipher: "aes-256-gcm", iv: hex(iv), tag: hex(tag), ciphertext: hex(ciphertext) };
}

function decrypt(file: VaultFile, key: Buffer): VaultEntry[] {
  let plaintext: string;
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, fromHex(file.iv), { authTagLength: TAG_LENGTH });
    decipher.setAuthTag(fromHex(file.tag));
    plaintext = Buffer.concat([decipher.update(fromHex(file.ciphertext)), decipher.final()]).toString("utf8");
  } catch {
    const message = "cannot decrypt the note vault: wrong passphrase, or the file was altered";
    throw new VaultError("WRONG_PASSPHRASE", message);
  }
  const content = VaultContentSchema.safeParse(parseJson(plaintext));
  if (!content.success) throw new VaultError("CORRUPT_VAULT", "the note vault's content is malformed");
  return content.data.notes.map(({ spent, commitment, value, label, nullifier, secret }) => {
    const note = createNote(value, label, { nullifier, secret });
    if (note.commitment !== commitment) {
      throw new VaultError("CORRUPT_VAULT", "a stored note does not match its commitment");
    }
    return { note, spent };
  });
}

async function writeAtomically(file: string, text: string): Promise<void> {
  const temporary = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    const handle = await open(temporary, "wx", 0o600);
    try {
      await handle.writeFile(text, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};
const hex = (bytes: Buffer) => `0x${bytes.toString("hex")}`;
const fromHex = (text: string) => Buffer.from(text.slice(2), "hex");

import { createCipheriv, createDecipheriv, randomBytes, scrypt, type ScryptOptions } from "node:crypto";
import { open, rename, rm } from "node:fs/promises";
import { z } from "zod";
import { noteWithCommitment, type Note } from "../note/note.js";
import { FieldElementSchema, HexSchema } from "../schema/primitives.js";
import type { StoredPresentation } from "./note-reservation.js";
import { StoredTabSchema, type StoredTab } from "./tab-record.js";

// The vault's file: its notes and tabs as one AES-256-GCM ciphertext under a key from scrypt(passphrase), written
// atomically. NoteVault (vault.ts) keeps the notes in memory and writes them here on every change.

/** Why a vault operation failed; never carries a secret. */
export type VaultErrorCode =
  | "VAULT_EXISTS"
  | "VAULT_NOT_FOUND"
  | "WRONG_PASSPHRASE"
  | "CORRUPT_VAULT"
  | "NOTE_NOT_FOUND"
  /** Another process holds the vault (its `<file>.lock`), or this process opened it already. */
  | "VAULT_LOCKED"
  | "VAULT_CLOSED";

export class VaultError extends Error {
  constructor(
    readonly code: VaultErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "VaultError";
  }
}

/**
 * A stored note as the vault keeps it: `sentAt` set from the moment its spend may have left until it ends, and
 * `holdUntil` when that spend can land until a known time (a shielded-proof payment's window).
 */
export interface StoredNote {
  note: Note;
  spent: boolean;
  sentAt?: number;
  holdUntil?: number;
  presentation?: StoredPresentation;
}

/** scrypt cost of new vaults: 2^15 x 8 x 128 bytes = 32 MiB and about 0.1 s per open. */
export const NEW_VAULT_KDF = { name: "scrypt", N: 1 << 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const IV_LENGTH = 12;
/** GCM's full tag. Node accepts a tag as short as 4 bytes unless told its length, and a short tag is forgeable. */
const TAG_LENGTH = 16;

export const VaultFileSchema = z
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
export type VaultFile = z.infer<typeof VaultFileSchema>;

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
          sentAt: z.number().int().nonnegative().optional(),
          holdUntil: z.number().int().nonnegative().optional(),
          presentation: z
            .object({ request: z.string(), headers: z.record(z.string(), z.string()), withdrawnValue: FieldElementSchema })
            .strict()
            .optional(),
        })
        .strict(),
    ),
    /**
     * The agent's private tabs (absent from vaults written before tabs). A tab of an earlier version's shape (one a
     * single-use payer funded, of an earlier deployment of the contracts) is not read: nothing of this version pays on
     * it, and its notes leave that deployment by ragequit.
     */
    tabs: z.array(z.unknown()).optional(),
  })
  .strict();

/** What the vault holds: its notes and its tabs. */
export interface VaultContent {
  entries: StoredNote[];
  tabs: StoredTab[];
}

export function deriveKey(passphrase: string, kdf: VaultFile["kdf"]): Promise<Buffer> {
  const { N, r, p } = kdf;
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r };
  return new Promise((resolve, reject) =>
    scrypt(passphrase.normalize("NFKC"), Buffer.from(kdf.salt.slice(2), "hex"), KEY_LENGTH, options, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
}

export function encrypt({ entries, tabs }: VaultContent, kdf: VaultFile["kdf"], key: Buffer): VaultFile {
  const notes = entries.map(({ note, spent, sentAt, holdUntil, presentation }) => ({
    nullifier: note.nullifier.toString(),
    secret: note.secret.toString(),
    value: note.value.toString(),
    label: note.label.toString(),
    commitment: note.commitment.toString(),
    spent,
    ...(sentAt !== undefined && { sentAt }),
    ...(holdUntil !== undefined && { holdUntil }),
    ...(presentation !== undefined && { presentation: { ...presentation, withdrawnValue: presentation.withdrawnValue.toString() } }),
  }));
  const iv = randomBytes(IV_LENGTH);
  const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_LENGTH });
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify({ notes, ...(tabs.length > 0 && { tabs }) }), "utf8"), cipher.final()]);
  const tag = cipher.getAuthTag();
  return { version: 1, kdf, cipher: "aes-256-gcm", iv: hex(iv), tag: hex(tag), ciphertext: hex(ciphertext) };
}

export function decrypt(file: VaultFile, key: Buffer): VaultContent {
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
  const entries = content.data.notes.map(({ spent, commitment, value, label, nullifier, secret, sentAt, holdUntil, presentation }) => {
    const note = noteWithCommitment(value, label, { nullifier, secret }, commitment);
    if (note === undefined) {
      throw new VaultError("CORRUPT_VAULT", "a stored note does not match its commitment");
    }
    return {
      note,
      spent,
      ...(sentAt !== undefined && { sentAt }),
      ...(holdUntil !== undefined && { holdUntil }),
      ...(presentation !== undefined && { presentation: { ...presentation, withdrawnValue: BigInt(presentation.withdrawnValue) } }),
    };
  });
  const tabs = (content.data.tabs ?? []).flatMap((tab) => {
    const parsed = StoredTabSchema.safeParse(tab);
    return parsed.success ? [parsed.data] : [];
  });
  return { entries, tabs };
}

export async function writeAtomically(file: string, text: string): Promise<void> {
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

export const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};
const hex = (bytes: Buffer) => `0x${bytes.toString("hex")}`;
const fromHex = (text: string) => Buffer.from(text.slice(2), "hex");

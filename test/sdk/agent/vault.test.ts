import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { NoteVault, VaultError, type VaultErrorCode } from "../../../sdk/agent/index.js";
import { changeNoteOf, createNote, type Note } from "../../../sdk/index.js";
import { rejectionOf } from "./helpers/rejection.js";

const PASSPHRASE = "correct horse battery staple";
// Large secrets, so that their decimal and hex forms are long enough to be unmistakable in the file.
const NOTE = createNote(5_000_000n, 42n, {
  nullifier: 0x1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdefn,
  secret: 0x0fedcba9876543210fedcba9876543210fedcba9876543210fedcba98765432n,
});
const CHANGE = changeNoteOf(NOTE, 2_000_000n);

const vaultFile = () => path.join(mkdtempSync(path.join(tmpdir(), "note-vault-")), "notes.vault");

async function expectVaultError(promise: Promise<unknown>, code: VaultErrorCode): Promise<VaultError> {
  const error = await rejectionOf(promise);
  expect(error).to.be.instanceOf(VaultError);
  expect((error as VaultError).code).to.equal(code);
  return error as VaultError;
}

describe("note vault", function () {
  it("keeps saved notes and their spent flags across a reopen", async function () {
    const file = vaultFile();
    const vault = await NoteVault.create(file, PASSPHRASE);
    await vault.save(NOTE);
    await vault.save(NOTE);
    await vault.markSpent(NOTE.commitment);
    await vault.save(CHANGE);

    const reopened = await NoteVault.open(file, PASSPHRASE);
    expect(await reopened.list()).to.deep.equal([
      { note: NOTE, spent: true },
      { note: CHANGE, spent: false },
    ]);
  });

  it("serialises concurrent saves without losing one", async function () {
    const file = vaultFile();
    const vault = await NoteVault.create(file, PASSPHRASE);
    const notes: Note[] = [1n, 2n, 3n, 4n].map((value) => changeNoteOf(NOTE, value * 1_000_000n));
    await Promise.all(notes.map((note) => vault.save(note)));
    const stored = (await (await NoteVault.open(file, PASSPHRASE)).list()).map(({ note }) => note);
    expect(stored).to.deep.equal(notes);
  });

  it("refuses a wrong passphrase with a clear error", async function () {
    const file = vaultFile();
    await (await NoteVault.create(file, PASSPHRASE)).save(NOTE);
    const error = await expectVaultError(NoteVault.open(file, "wrong passphrase"), "WRONG_PASSPHRASE");
    expect(error.message).to.equal("cannot decrypt the note vault: wrong passphrase, or the file was altered");
  });

  it("never writes a note field in clear, not even its name", async function () {
    const file = vaultFile();
    const vault = await NoteVault.create(file, PASSPHRASE);
    await vault.save(NOTE);
    await vault.save(CHANGE);

    const raw = readFileSync(file, "utf8");
    for (const note of [NOTE, CHANGE]) {
      for (const field of [note.nullifier, note.secret, note.commitment]) {
        expect(raw).to.not.contain(field.toString());
        expect(raw.toLowerCase()).to.not.contain(field.toString(16));
      }
    }
    for (const name of ["nullifier", "secret", "value", "label", "commitment"]) expect(raw).to.not.contain(name);
    expect(Object.keys(JSON.parse(raw))).to.deep.equal(["version", "kdf", "cipher", "iv", "tag", "ciphertext"]);
  });

  it("detects a tampered ciphertext", async function () {
    const file = vaultFile();
    await (await NoteVault.create(file, PASSPHRASE)).save(NOTE);
    const content = JSON.parse(readFileSync(file, "utf8")) as { ciphertext: string };
    const last = content.ciphertext.at(-1) === "0" ? "1" : "0";
    writeFileSync(file, JSON.stringify({ ...content, ciphertext: content.ciphertext.slice(0, -1) + last }));
    await expectVaultError(NoteVault.open(file, PASSPHRASE), "WRONG_PASSPHRASE");
  });

  it("refuses a tag shorter than GCM's 16 bytes, even the genuine tag's prefix", async function () {
    const file = vaultFile();
    await (await NoteVault.create(file, PASSPHRASE)).save(NOTE);
    const content = JSON.parse(readFileSync(file, "utf8")) as { tag: string };
    expect(content.tag).to.have.length(2 + 32);
    for (const bytes of [4, 8, 12, 15]) {
      writeFileSync(file, JSON.stringify({ ...content, tag: content.tag.slice(0, 2 + 2 * bytes) }));
      const error = await expectVaultError(NoteVault.open(file, PASSPHRASE), "CORRUPT_VAULT");
      expect(error.message, `a ${bytes}-byte tag`).to.contain("is not a note vault");
    }
  });

  it("replaces the file atomically, leaving no temporary file", async function () {
    const file = vaultFile();
    const vault = await NoteVault.create(file, PASSPHRASE);
    await vault.save(NOTE);
    await vault.markSpent(NOTE.commitment);
    expect(readdirSync(path.dirname(file))).to.deep.equal([path.basename(file)]);
  });

  it("refuses to overwrite a file, to open a missing or foreign one, to mark an unknown note spent", async function () {
    const file = vaultFile();
    const vault = await NoteVault.create(file, PASSPHRASE);
    await expectVaultError(NoteVault.create(file, PASSPHRASE), "VAULT_EXISTS");
    await expectVaultError(NoteVault.open(`${file}.missing`, PASSPHRASE), "VAULT_NOT_FOUND");
    await expectVaultError(vault.markSpent(NOTE.commitment), "NOTE_NOT_FOUND");
    writeFileSync(file, "not a vault");
    await expectVaultError(NoteVault.open(file, PASSPHRASE), "CORRUPT_VAULT");
  });
});

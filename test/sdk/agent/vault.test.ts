import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { NoteVault, VaultError, type NoteReservation, type VaultErrorCode } from "../../../sdk/agent/index.js";
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

/** A vault at `file` holding `notes`, closed. */
async function createdWith(file: string, ...notes: Note[]): Promise<void> {
  const vault = await NoteVault.create(file, PASSPHRASE);
  for (const note of notes) await vault.save(note);
  await vault.close();
}

async function expectRejection(promise: Promise<unknown>, message: string): Promise<void> {
  expect((await rejectionOf(promise)).message).to.equal(message);
}

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
    await vault.close();

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
    await vault.close();
    const stored = (await (await NoteVault.open(file, PASSPHRASE)).list()).map(({ note }) => note);
    expect(stored).to.deep.equal(notes);
  });

  it("refuses a wrong passphrase with a clear error", async function () {
    const file = vaultFile();
    await createdWith(file, NOTE);
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
    await createdWith(file, NOTE);
    const content = JSON.parse(readFileSync(file, "utf8")) as { ciphertext: string };
    const last = content.ciphertext.at(-1) === "0" ? "1" : "0";
    writeFileSync(file, JSON.stringify({ ...content, ciphertext: content.ciphertext.slice(0, -1) + last }));
    await expectVaultError(NoteVault.open(file, PASSPHRASE), "WRONG_PASSPHRASE");
  });

  it("refuses a tag shorter than GCM's 16 bytes, even the genuine tag's prefix", async function () {
    const file = vaultFile();
    await createdWith(file, NOTE);
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
    expect(readdirSync(path.dirname(file)).sort()).to.deep.equal([path.basename(file), `${path.basename(file)}.lock`]);
    await vault.close();
    expect(readdirSync(path.dirname(file))).to.deep.equal([path.basename(file)]);
  });

  it("refuses to overwrite a file, to open a missing or foreign one, to mark an unknown note spent", async function () {
    const file = vaultFile();
    const vault = await NoteVault.create(file, PASSPHRASE);
    await expectVaultError(NoteVault.create(file, PASSPHRASE), "VAULT_EXISTS");
    await expectVaultError(NoteVault.open(`${file}.missing`, PASSPHRASE), "VAULT_NOT_FOUND");
    await expectVaultError(vault.markSpent(NOTE.commitment), "NOTE_NOT_FOUND");
    await vault.close();
    writeFileSync(file, "not a vault");
    await expectVaultError(NoteVault.open(file, PASSPHRASE), "CORRUPT_VAULT");
  });

  it("keeps the agent's private tabs encrypted across a reopen: the newest of a seller, a tab that never opened dropped when another is kept", async function () {
    const file = vaultFile();
    const key = (byte: string) => `0x${byte.repeat(32)}`;
    const unopened = { seller: "seller-a", tabKey: key("a1"), salt: key("b1"), createdAt: 1 };
    const opened = {
      seller: "seller-a",
      tabKey: key("a2"),
      salt: key("b2"),
      createdAt: 2,
      opened: { payer: "0x00000000000000000000000000000000000000aa", channelId: key("c2"), depositAmount: "100000", reclaimableAfter: 1_900_000_000 },
    };
    const vault = await NoteVault.create(file, PASSPHRASE);
    await vault.save(NOTE);
    await vault.saveTab(unopened);
    expect(await vault.tab("seller-a")).to.deep.equal(unopened);
    await vault.saveTab(opened);
    await vault.saveTab({ ...opened, seller: "seller-b", tabKey: key("a3") });
    await vault.close();

    const text = readFileSync(file, "utf8");
    for (const secret of ["a1", "a2", "a3"]) expect(text).to.not.contain(secret.repeat(32));
    const reopened = await NoteVault.open(file, PASSPHRASE);
    expect(await reopened.tab("seller-a")).to.deep.equal(opened);
    expect((await reopened.tab("seller-b"))?.tabKey).to.equal(key("a3"));
    expect(await reopened.tab("seller-c")).to.equal(undefined);
    expect((await reopened.list()).map((entry) => entry.note.commitment)).to.deep.equal([NOTE.commitment]);
    await reopened.close();
  });

  describe("a wallet of several notes: reservations", function () {
    const noteOf = (value: bigint, tag: bigint) => createNote(value, tag, { nullifier: tag * 7n, secret: tag * 11n });
    const [small, middle, large] = [noteOf(1_000_000n, 1n), noteOf(2_000_000n, 2n), noteOf(3_000_000n, 3n)];

    it("gives concurrent payments different notes, the smallest that holds each first, and none to a payment no note can serve", async function () {
      const vault = await NoteVault.create(vaultFile(), PASSPHRASE);
      for (const note of [large, small, middle]) await vault.save(note);
      const held = await Promise.all([1, 2, 3].map(() => vault.reserve({ atLeast: 500_000n })));
      expect(held.map((reservation) => reservation!.note.value)).to.deep.equal([1_000_000n, 2_000_000n, 3_000_000n]);
      expect(await vault.reserve({ atLeast: 3_000_001n })).to.equal(undefined);
      const entries = await vault.list();
      expect(entries.every((entry) => entry.reserved !== undefined && entry.reserved.sentAt === undefined)).to.equal(true);
      for (const reservation of held) await reservation!.released();
      const next = await vault.reserve({ atLeast: 500_000n, skip: new Set([small.commitment]) });
      expect(next!.note, "a note this payment tried is skipped").to.deep.equal(middle);
      await next!.released();
      await vault.close();
    });

    it("makes a payment that finds every note that could pay it held wait for one to end, and pay from the change", async function () {
      const vault = await NoteVault.create(vaultFile(), PASSPHRASE);
      await vault.save(middle);
      const first = (await vault.reserve({ atLeast: 400_000n }))!;
      let waited: NoteReservation | undefined;
      const second = vault.reserve({ atLeast: 400_000n }).then((reservation) => (waited = reservation));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(waited, "still waiting while the only note is held").to.equal(undefined);

      const change = changeNoteOf(middle, 500_000n);
      await first.sending();
      await first.spent(change);
      expect((await second)!.note).to.deep.equal(change);
      expect((await vault.list()).map(({ note, spent }) => ({ value: note.value, spent }))).to.deep.equal([
        { value: 2_000_000n, spent: true },
        { value: 1_500_000n, spent: false },
      ]);
      await waited!.released();
      await vault.close();
    });

    it("keeps on disk only a reservation whose spend may have left: after a restart, a note chosen and never sent is free, a sent one waits for reconcile", async function () {
      const file = vaultFile();
      const vault = await NoteVault.create(file, PASSPHRASE);
      for (const note of [small, middle]) await vault.save(note);
      const chosen = (await vault.reserve({ atLeast: 1n }))!;
      const sent = (await vault.reserve({ atLeast: 1n }))!;
      await sent.sending();
      const [before] = (await vault.list()).filter((entry) => entry.reserved?.sentAt !== undefined);
      expect(before!.note).to.deep.equal(middle);
      expect(chosen.note).to.deep.equal(small);
      // A crash: the file as the process left it, opened again by the next one (which takes over a dead process's lock).
      const crashed = readFileSync(file);
      await vault.close();
      writeFileSync(file, crashed);

      const restarted = await NoteVault.open(file, PASSPHRASE);
      const entries = await restarted.list();
      expect(entries.map(({ note, reserved }) => ({ value: note.value, reserved }))).to.deep.equal([
        { value: small.value, reserved: undefined },
        { value: middle.value, reserved: { sentAt: before!.reserved!.sentAt } },
      ]);
      expect(await restarted.reserve({ atLeast: middle.value }), "the sent note is not given out").to.equal(undefined);
      const free = await restarted.reserve({ atLeast: 1n });
      expect(free!.note).to.deep.equal(small);
      await free!.released();
      await restarted.close();
    });

    it("moves a reservation to the change note when the payment goes on from it (an access fee paid out of the note)", async function () {
      const vault = await NoteVault.create(vaultFile(), PASSPHRASE);
      await vault.save(large);
      const held = (await vault.reserve({ atLeast: 1n }))!;
      await held.sending();
      const change = changeNoteOf(large, 10_000n);
      const next = await held.spentInto(change);
      expect(next.note).to.deep.equal(change);
      const entries = await vault.list();
      expect(entries.map(({ note, spent, reserved }) => ({ value: note.value, spent, reserved })), "the change note stays the payment's").to.deep.equal([
        { value: large.value, spent: true, reserved: undefined },
        { value: change.value, spent: false, reserved: {} },
      ]);
      await expectRejection(held.released(), "this note's reservation has ended already");
      await next.unsettled();
      // Never sent: nothing can have spent it, so it is free again.
      expect((await vault.reserve({ atLeast: 1n }))!.note).to.deep.equal(change);
      await vault.close();
    });
  });

  describe("one process at a time holds a vault", function () {
    it("refuses a second open while the vault is held, in this process or another live one, and opens it once closed", async function () {
      const file = vaultFile();
      const vault = await NoteVault.create(file, PASSPHRASE);
      const here = await expectVaultError(NoteVault.open(file, PASSPHRASE), "VAULT_LOCKED");
      expect(here.message).to.contain("already open in this process");
      await vault.close();

      // The parent of this process is alive and is not this process.
      writeFileSync(`${file}.lock`, JSON.stringify({ pid: process.ppid, token: "other" }));
      const other = await expectVaultError(NoteVault.open(file, PASSPHRASE), "VAULT_LOCKED");
      expect(other.message).to.contain(`in use by process ${process.ppid}`);
      expect(readFileSync(`${file}.lock`, "utf8"), "a live holder's lock is left alone").to.contain("other");
    });

    it("takes over the lock of a process that is gone, and of this process's id when this process does not hold it", async function () {
      const file = vaultFile();
      await createdWith(file, NOTE);
      const gone = spawnSync(process.execPath, ["-e", ""]).pid;
      for (const pid of [gone, process.pid]) {
        writeFileSync(`${file}.lock`, JSON.stringify({ pid, token: "stale" }));
        const vault = await NoteVault.open(file, PASSPHRASE);
        expect(JSON.parse(readFileSync(`${file}.lock`, "utf8")).pid).to.equal(process.pid);
        await vault.close();
        expect(existsSync(`${file}.lock`)).to.equal(false);
      }
    });

    it("takes no change once closed", async function () {
      const vault = await NoteVault.create(vaultFile(), PASSPHRASE);
      await vault.close();
      await expectVaultError(vault.save(NOTE), "VAULT_CLOSED");
      await expectVaultError(vault.reserve({ atLeast: 1n }), "VAULT_CLOSED");
    });
  });
});

import { expect } from "chai";
import { depositSecretsOf, masterKeysOf } from "../../../sdk/agent/index.js";
import type { PoolLogs } from "../../../sdk/agent/pool-events.js";
import { rebuildNoteChains } from "../../../sdk/agent/recovery.js";
import {
  changeNoteOf,
  createNote,
  deriveChangeSecrets,
  nullifierHashOf,
  precommitmentOf,
  type Note,
  type NoteSecrets,
} from "../../../sdk/index.js";

const KEYS = masterKeysOf(`0x${"42".repeat(32)}`);
const SCOPE = 7n;
const AT = { blockNumber: 1, txHash: `0x${"ab".repeat(32)}` };

/** Pool logs built by hand: the walk over them needs no chain. */
function poolLogs() {
  const logs: PoolLogs = { depositsByPrecommitment: new Map(), spendsByNullifierHash: new Map(), refundsByOrigin: new Map(), toBlock: 1 };
  return {
    logs,
    deposit(index: number, value: bigint): Note {
      const secrets = depositSecretsOf(KEYS, SCOPE, index);
      const note = createNote(value, 1000n + BigInt(index), secrets);
      const precommitment = precommitmentOf(secrets);
      const { commitment, label } = note;
      logs.depositsByPrecommitment.set(precommitment, { commitment, label, value, precommitment, ...AT });
      return note;
    },
    withdraw(note: Note, withdrawnValue: bigint, changeSecrets: NoteSecrets = deriveChangeSecrets(note)): Note {
      const change = changeNoteOf(note, withdrawnValue, changeSecrets);
      const spend = { kind: "withdrawn" as const, withdrawnValue, newCommitment: change.commitment, ...AT };
      logs.spendsByNullifierHash.set(nullifierHashOf(note.nullifier), spend);
      return change;
    },
    ragequit(note: Note): void {
      logs.spendsByNullifierHash.set(nullifierHashOf(note.nullifier), { kind: "ragequit", value: note.value, ...AT });
    },
  };
}

describe("note chain rebuilding", function () {
  it("follows each deposit through its derived change notes to the latest", function () {
    const pool = poolLogs();
    const first = pool.deposit(0, 10_000_000n);
    const latest = pool.withdraw(pool.withdraw(first, 3_000_000n), 2_000_000n);
    const second = pool.deposit(1, 1_000_000n);

    const chains = rebuildNoteChains(pool.logs, KEYS, SCOPE, 1);
    expect(chains.map(({ depositIndex, latest, status }) => ({ depositIndex, latest, status }))).to.deep.equal([
      { depositIndex: 0, latest, status: "unspent" },
      { depositIndex: 1, latest: second, status: "unspent" },
    ]);
    expect(latest.value).to.equal(5_000_000n);
    expect(chains[0]!.history.map((step) => step.kind)).to.deep.equal(["deposited", "withdrawn", "withdrawn"]);
  });

  it("keeps secrets out of the history", function () {
    const pool = poolLogs();
    const note = pool.deposit(0, 2_000_000n);
    const change = pool.withdraw(note, 1_000_000n);
    const [chain] = rebuildNoteChains(pool.logs, KEYS, SCOPE, 1);
    const history = JSON.stringify(chain!.history, (_, value: unknown) =>
      typeof value === "bigint" ? value.toString() : value,
    );
    for (const secret of [note.nullifier, note.secret, change.nullifier, change.secret]) {
      expect(history).to.not.contain(secret.toString());
    }
  });

  it("ends a fully withdrawn chain at its zero-value note and a ragequit chain at the note taken back", function () {
    const pool = poolLogs();
    const emptied = pool.withdraw(pool.deposit(0, 1_000_000n), 1_000_000n);
    const takenBack = pool.withdraw(pool.deposit(1, 3_000_000n), 1_000_000n);
    pool.ragequit(takenBack);

    const chains = rebuildNoteChains(pool.logs, KEYS, SCOPE, 1);
    expect(chains.map(({ latest, status }) => ({ latest, status }))).to.deep.equal([
      { latest: emptied, status: "empty" },
      { latest: takenBack, status: "ragequit" },
    ]);
    expect(emptied.value).to.equal(0n);
  });

  it("stops at a withdrawal whose change note was not derived from the spent note", function () {
    const pool = poolLogs();
    const spent = pool.withdraw(pool.deposit(0, 5_000_000n), 1_000_000n);
    const foreign = pool.withdraw(spent, 1_000_000n, { nullifier: 11n, secret: 12n });

    const [chain] = rebuildNoteChains(pool.logs, KEYS, SCOPE, 1);
    expect(chain).to.deep.include({ latest: spent, status: "mismatch" });
    expect(chain!.history.at(-1)).to.deep.include({
      kind: "withdrawn",
      spentCommitment: spent.commitment,
      newCommitment: foreign.commitment,
    });
  });

  it("looks past as many unused indexes as the gap limit allows", function () {
    const pool = poolLogs();
    pool.deposit(0, 1_000_000n);
    pool.deposit(3, 1_000_000n);
    const found = (gapLimit: number) =>
      rebuildNoteChains(pool.logs, KEYS, SCOPE, gapLimit).map((chain) => chain.depositIndex);
    expect(found(2)).to.deep.equal([0]);
    expect(found(3)).to.deep.equal([0, 3]);
  });
});

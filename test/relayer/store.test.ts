import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "chai";
import pg from "pg";
import { RelayerError } from "../../relayer/errors.js";
import { PgRelayerStore } from "../../relayer/store/pg-store.js";
import type { LeaseRecord } from "../../relayer/store/relayer-store.js";
import { SqliteRelayerStore } from "../../relayer/store/sqlite-store.js";
import { createTestSchema, type TestSchema } from "../helpers/database.js";
import { holdSqliteWriteLock } from "./helpers/sqlite-writer.js";
import { describeRelayerStore } from "./helpers/store-contract.js";

const lease: LeaseRecord = {
  nullifierHash: 77n,
  state: "reserved",
  token: "token-77",
  fingerprint: "f7".repeat(32),
  recipient: "0x000000000000000000000000000000000000bEEF",
  gross: 1_000_000n,
  fee: 0n,
  changeCommitment: 78n,
  remainingValue: 0n,
  fundingTxHash: null,
  proofTimeMs: null,
  payment: null,
  updatedAt: "2020-01-01T00:00:00.000Z",
};

/** The error `promise` rejects with (failing when it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail("expected a rejection"),
    (error: unknown) => error,
  );
}

/** STORE_UNAVAILABLE: 503 with a Retry-After, nothing said spent or not beyond what the caller knows. */
function expectStoreUnavailable(error: unknown): void {
  expect(error).to.be.instanceOf(RelayerError);
  expect(error).to.include({ code: "STORE_UNAVAILABLE", status: 503 });
  expect((error as RelayerError).retryAfterSeconds).to.be.above(0);
}

const sqliteFile = () => path.join(mkdtempSync(path.join(tmpdir(), "relayer-store-")), "relayer.sqlite");

describeRelayerStore("SQLite", async () => {
  const file = sqliteFile();
  return { open: async () => new SqliteRelayerStore(file) };
});

describe("SQLite relayer store under another writer", function () {
  it("answers STORE_UNAVAILABLE once another writer holds the file past the busy timeout", async function () {
    const file = sqliteFile();
    const store = new SqliteRelayerStore(file);
    try {
      const lock = await holdSqliteWriteLock(file, 8_000);
      expectStoreUnavailable(await rejectionOf(store.reserveLease(lease)));
      // Readers are not held up by a writer (WAL).
      expect(await store.getLease(lease.nullifierHash)).to.equal(undefined);
      await lock.released;
      expect(await store.reserveLease(lease)).to.equal(true);
    } finally {
      await store.close();
    }
  });
});

describe("SQLite relayer store opening a file of an earlier version", function () {
  it("lets a lease of a file whose remaining values were required leave it unknown, keeping its leases and sweeps", async function () {
    const file = sqliteFile();
    const nonce = `0x${"79".repeat(32)}`;
    const xPayment = Buffer.from(JSON.stringify({ x402Version: 2, payload: { authorization: { nonce } } })).toString("base64");
    const earlier = new DatabaseSync(file);
    earlier.exec(`
      CREATE TABLE leases (
        nullifier_hash TEXT PRIMARY KEY, state TEXT NOT NULL CHECK (state IN ('reserved', 'withdrawing', 'settled', 'failed')),
        token TEXT NOT NULL, fingerprint TEXT NOT NULL, recipient TEXT NOT NULL, gross TEXT NOT NULL, fee TEXT NOT NULL,
        change_commitment TEXT NOT NULL, remaining_value TEXT NOT NULL, funding_tx_hash TEXT, proof_time_ms INTEGER,
        x_payment TEXT, valid_before INTEGER, refund_precommitment TEXT, updated_at TEXT NOT NULL);
      CREATE TABLE sweeps (
        nullifier_hash TEXT PRIMARY KEY REFERENCES leases (nullifier_hash), payer TEXT NOT NULL, amount TEXT NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('empty', 'deposited', 'held')), deposit_tx_hash TEXT, swept_at TEXT NOT NULL);
      INSERT INTO leases VALUES ('77', 'settled', 'token-77', '${lease.fingerprint}', '${lease.recipient}', '1000000', '0', '78', '5',
        '0x${"ab".repeat(32)}', 250, '${xPayment}', 1000, '79', '${lease.updatedAt}');
      INSERT INTO sweeps VALUES ('77', '${lease.recipient}', '0', 'empty', NULL, '2026-01-01T00:00:00.000Z');`);
    earlier.close();

    const store = new SqliteRelayerStore(file);
    try {
      expect(await store.getLease(77n)).to.deep.include({ state: "settled", remainingValue: 5n, proofTimeMs: 250, payment: { xPayment, validBefore: 1000, nonce, refundAnchor: null } });
      expect(await store.getSweep(77n)).to.deep.include({ outcome: "empty" });
      const unknown = { ...lease, nullifierHash: 80n, remainingValue: null };
      expect(await store.reserveLease(unknown)).to.equal(true);
      expect(await store.getLease(80n)).to.deep.equal(unknown);
    } finally {
      await store.close();
    }
  });

  it("adds the authorizations' label and the leases' refund commitment, and drops the one-deposit-per-transaction index", async function () {
    const file = sqliteFile();
    const earlier = new DatabaseSync(file);
    earlier.exec(`
      CREATE TABLE authorizations (
        nullifier_hash TEXT PRIMARY KEY, network TEXT NOT NULL, access_token_tx_hash TEXT NOT NULL,
        amount TEXT NOT NULL, authorized_at TEXT NOT NULL);
      CREATE UNIQUE INDEX authorizations_by_tx ON authorizations (network, access_token_tx_hash)
        WHERE access_token_tx_hash <> 'inherited';
      CREATE TABLE leases (
        nullifier_hash TEXT PRIMARY KEY, state TEXT NOT NULL CHECK (state IN ('reserved', 'withdrawing', 'settled', 'failed')),
        token TEXT NOT NULL, fingerprint TEXT NOT NULL, recipient TEXT NOT NULL, gross TEXT NOT NULL, fee TEXT NOT NULL,
        change_commitment TEXT NOT NULL, remaining_value TEXT, funding_tx_hash TEXT, proof_time_ms INTEGER,
        x_payment TEXT, valid_before INTEGER, payment_nonce TEXT, updated_at TEXT NOT NULL);
      ${EARLIER_AUTHORIZATIONS}`);
    earlier.close();

    const store = new SqliteRelayerStore(file);
    try {
      await expectMigrated(store);
    } finally {
      await store.close();
    }
  });
});

/** A settle-x402 lease as this version reserves it: its payment with the proof's refund commitment. */
const paidLease: LeaseRecord = {
  ...lease,
  nullifierHash: 81n,
  payment: { xPayment: "eyJ4NDAyVmVyc2lvbiI6Mn0=", validBefore: 1_000, nonce: `0x${"81".repeat(32)}`, refundAnchor: 82n },
};

/** The authorizations of an earlier version: one transaction authorized one deposit, carried over with no label. */
const EARLIER_AUTHORIZATIONS = `
  INSERT INTO authorizations VALUES ('90', 'eip155:84532', '0x${"aa".repeat(32)}', '1000', '2026-01-01T00:00:00.000Z');
  INSERT INTO authorizations VALUES ('91', 'eip155:84532', 'inherited', '0', '2026-01-01T00:00:00.000Z');`;

/**
 * What a store opened on a database of an earlier version must do: keep its authorizations, hold one carried over
 * with no label for no note, let one transaction pay for several notes, and store a lease's refund commitment.
 */
async function expectMigrated(store: SqliteRelayerStore | PgRelayerStore): Promise<void> {
  expect(await store.authorizationOf(90n)).to.deep.equal({ inherited: false });
  expect(await store.authorizationOf(91n)).to.deep.equal({ inherited: true, label: null });
  const sameTransaction = { nullifierHash: 92n, network: "eip155:84532", accessTokenTxHash: `0x${"aa".repeat(32)}`, amount: 1_000n, authorizedAt: "2026-01-02T00:00:00.000Z" };
  expect(await store.recordAuthorization(sameTransaction)).to.equal(true);
  expect(await store.reserveLease(paidLease)).to.equal(true);
  expect(await store.getLease(paidLease.nullifierHash)).to.deep.equal(paidLease);
}

describe("PostgreSQL relayer store", function () {
  const schemas: TestSchema[] = [];
  // Runs after the contract's own afterEach has closed its stores.
  afterEach(async function () {
    await Promise.all(schemas.splice(0).map((schema) => schema.drop()));
  });

  describeRelayerStore("PostgreSQL", async () => {
    const schema = await createTestSchema();
    schemas.push(schema);
    return { open: () => PgRelayerStore.open(schema) };
  });

  it("adds the authorizations' label and the leases' refund commitment to a schema of an earlier version, and drops the one-deposit-per-transaction index", async function () {
    const schema = await createTestSchema();
    schemas.push(schema);
    const earlier = new pg.Client({ connectionString: schema.connectionString, options: `-c search_path=${schema.schema}` });
    await earlier.connect();
    try {
      await earlier.query(`
        CREATE TABLE authorizations (
          nullifier_hash NUMERIC(78) PRIMARY KEY, network TEXT NOT NULL, access_token_tx_hash TEXT NOT NULL,
          amount NUMERIC(78) NOT NULL, authorized_at TEXT NOT NULL);
        CREATE UNIQUE INDEX authorizations_by_tx ON authorizations (network, access_token_tx_hash)
          WHERE access_token_tx_hash <> 'inherited';
        CREATE TABLE leases (
          nullifier_hash NUMERIC(78) PRIMARY KEY,
          state TEXT NOT NULL CHECK (state IN ('reserved', 'withdrawing', 'settled', 'failed')), token TEXT NOT NULL,
          fingerprint TEXT NOT NULL, recipient TEXT NOT NULL, gross NUMERIC(78) NOT NULL, fee NUMERIC(78) NOT NULL,
          change_commitment NUMERIC(78) NOT NULL, remaining_value NUMERIC(78), funding_tx_hash TEXT,
          proof_time_ms INTEGER, x_payment TEXT, valid_before BIGINT, payment_nonce TEXT, updated_at TEXT NOT NULL);
        ${EARLIER_AUTHORIZATIONS}`);
    } finally {
      await earlier.end();
    }
    const store = await PgRelayerStore.open(schema);
    try {
      await expectMigrated(store);
    } finally {
      await store.close();
    }
  });

  it("runs one relayer's work of a lock at a time: another relayer's run meanwhile is skipped, a later one runs", async function () {
    const schema = await createTestSchema();
    schemas.push(schema);
    const [first, second] = [await PgRelayerStore.open(schema), await PgRelayerStore.open(schema)];
    try {
      let release!: () => void;
      const holding = new Promise<void>((resolve) => (release = resolve));
      const ran: string[] = [];
      const firstRun = first.exclusively("test-lock", async () => {
        ran.push("first");
        await holding;
      });
      while (ran.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await second.exclusively("test-lock", async () => void ran.push("second, meanwhile"))).to.equal(false);
      expect(await second.exclusively("another-lock", async () => void ran.push("another lock"))).to.equal(true);
      release();
      expect(await firstRun).to.equal(true);
      expect(await second.exclusively("test-lock", async () => void ran.push("second, after"))).to.equal(true);
      expect(ran).to.deep.equal(["first", "another lock", "second, after"]);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  describe("under faults of its connections", function () {
    let schema: TestSchema;
    let store: PgRelayerStore;
    /** Another session on the same schema, as another relayer or an operator's console. */
    let other: pg.Client;

    beforeEach(async function () {
      schema = await createTestSchema();
      schemas.push(schema);
      store = await PgRelayerStore.open(schema);
      other = new pg.Client({ connectionString: schema.connectionString, options: `-c search_path=${schema.schema}` });
      await other.connect();
      expect(await store.reserveLease(lease)).to.equal(true);
    });
    afterEach(async function () {
      await other.end();
      await store.close();
    });

    /** Terminates the backend of the store's query now waiting on a lock of `other`, as a DBA or a failover would. */
    async function killWaitingQuery(): Promise<void> {
      for (;;) {
        const { rows } = await other.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()
             AND query LIKE '%leases%'`,
        );
        if (rows.length > 0) {
          await other.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
          return;
        }
        await sleep(20);
      }
    }

    it("answers STORE_UNAVAILABLE when a write's connection is killed mid-query, and does not repeat the write", async function () {
      await other.query("BEGIN");
      await other.query("SELECT * FROM leases FOR UPDATE");
      // Its refusal is taken at once: it may come while the kill is still being answered.
      const refused = rejectionOf(store.advanceLease(lease.nullifierHash, lease.token, "reserved", "withdrawing", { fundingTxHash: "0x01" }));
      await killWaitingQuery();
      expectStoreUnavailable(await refused);
      await other.query("COMMIT");
      expect(await store.getLease(lease.nullifierHash)).to.deep.include({ state: "reserved", fundingTxHash: null });
    });

    it("repeats a read whose connection was killed mid-query once, on a fresh connection", async function () {
      await other.query("BEGIN");
      await other.query("LOCK TABLE leases IN ACCESS EXCLUSIVE MODE");
      const reading = store.getLease(lease.nullifierHash);
      await killWaitingQuery();
      // The repeated read waits on the same lock until it is released.
      await sleep(200);
      await other.query("COMMIT");
      expect(await reading).to.deep.include({ state: "reserved", token: lease.token });
    });

    it("gives up on a row lock held past its lock timeout with STORE_UNAVAILABLE instead of hanging", async function () {
      await other.query("BEGIN");
      await other.query("SELECT * FROM leases FOR UPDATE");
      try {
        expectStoreUnavailable(await rejectionOf(store.advanceLease(lease.nullifierHash, lease.token, "reserved", "failed")));
      } finally {
        await other.query("ROLLBACK");
      }
    });
  });
});

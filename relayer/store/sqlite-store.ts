import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import { openSqlite } from "../../lib/sqlite.js";
import { countsByState, type AgentRecord, type AgentSpend, type AuthorizationRecord, type LeaseRecord, type LeaseState, type RelayerStore, type StoredAuthorization, type SweepRecord } from "./relayer-store.js";
import { agentValues, INHERITED, reservedLeaseValues, sweepValues, toAgent, toAuthorization, toLease, toSweep } from "./rows.js";
import { isSqliteBusy, storeUnavailable } from "./store-faults.js";

const LEASE_COLUMNS = `nullifier_hash TEXT PRIMARY KEY, state TEXT NOT NULL CHECK (state IN ('reserved', 'withdrawing', 'settled', 'failed')),
  token TEXT NOT NULL, fingerprint TEXT NOT NULL, recipient TEXT NOT NULL, gross TEXT NOT NULL, fee TEXT NOT NULL,
  change_commitment TEXT NOT NULL, remaining_value TEXT, funding_tx_hash TEXT, proof_time_ms INTEGER,
  x_payment TEXT, valid_before INTEGER, payment_nonce TEXT, refund_anchor TEXT, updated_at TEXT NOT NULL`;
const LEASE_COLUMN_NAMES = `nullifier_hash, state, token, fingerprint, recipient, gross, fee, change_commitment, remaining_value,
  funding_tx_hash, proof_time_ms, x_payment, valid_before, payment_nonce, refund_anchor, updated_at`;

// 'empty' and 'held' are outcomes earlier versions recorded (whole balances swept); kept readable.
const SWEEP_COLUMNS = `nullifier_hash TEXT PRIMARY KEY REFERENCES leases (nullifier_hash), payer TEXT NOT NULL, amount TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('deposited', 'used', 'not-recorded', 'empty', 'held')), deposit_tx_hash TEXT,
  swept_at TEXT NOT NULL`;

// Amounts and field elements are canonical decimal TEXT: SQLite integers stop at 2^63.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS authorizations (
  nullifier_hash TEXT PRIMARY KEY, network TEXT NOT NULL, access_token_tx_hash TEXT NOT NULL,
  amount TEXT NOT NULL, authorized_at TEXT NOT NULL, label TEXT);
DROP INDEX IF EXISTS authorizations_by_tx;
CREATE TABLE IF NOT EXISTS agents (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, public_key TEXT NOT NULL, owner_wallet TEXT NOT NULL,
  per_transaction_limit TEXT NOT NULL, daily_limit TEXT NOT NULL, provider_whitelist TEXT NOT NULL,
  categories TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leases (${LEASE_COLUMNS});
CREATE TABLE IF NOT EXISTS sweeps (${SWEEP_COLUMNS});
DROP TABLE IF EXISTS seller_payments;
CREATE TABLE IF NOT EXISTS seller_relay_claims (nullifier_hash TEXT PRIMARY KEY, lease_until INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS agent_spend (
  agent_id TEXT NOT NULL REFERENCES agents (id), day TEXT NOT NULL, amount TEXT NOT NULL, count INTEGER NOT NULL,
  PRIMARY KEY (agent_id, day));
`;

/**
 * The embedded store: one SQLite file (":memory:" for tests). A write waits for another writer of the file up to
 * lib/sqlite.ts's busy timeout, then answers STORE_UNAVAILABLE.
 */
export class SqliteRelayerStore implements RelayerStore {
  private readonly db: DatabaseSync;

  constructor(file: string) {
    this.db = openSqlite(file, `PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;\n${SCHEMA}`);
    // Files made before leases carried a reservation token.
    if (!this.db.prepare("SELECT 1 FROM pragma_table_info('leases') WHERE name = 'token'").get()) {
      this.db.exec("ALTER TABLE leases ADD COLUMN token TEXT NOT NULL DEFAULT ''");
    }
    // Files made before an authorization carried over to a change note was bound to its deposit's label.
    if (!this.db.prepare("SELECT 1 FROM pragma_table_info('authorizations') WHERE name = 'label'").get()) {
      this.db.exec("ALTER TABLE authorizations ADD COLUMN label TEXT");
    }
    // Files made before a lease could leave its remaining value unknown (a spend the agent proved).
    // Files made before a settle-x402 lease recorded its payment's nonce (the refund precommitment column stays unused).
    if (!this.db.prepare("SELECT 1 FROM pragma_table_info('leases') WHERE name = 'payment_nonce'").get()) {
      this.db.exec("ALTER TABLE leases ADD COLUMN payment_nonce TEXT");
    }
    // Files made before a settle-x402 lease stored its refund anchor (what the sweep's refund needs). The
    // refund_commitment column of earlier versions stays unused: it named a refund note of another circuit's proofs.
    if (!this.db.prepare("SELECT 1 FROM pragma_table_info('leases') WHERE name = 'refund_anchor'").get()) {
      this.db.exec("ALTER TABLE leases ADD COLUMN refund_anchor TEXT");
    }
    if (this.db.prepare(`SELECT 1 FROM pragma_table_info('leases') WHERE name = 'remaining_value' AND "notnull" = 1`).get()) {
      this.copyTable("leases", LEASE_COLUMNS, LEASE_COLUMN_NAMES);
    }
    // Files made before a sweep could find a payment used or unrecorded.
    const sweeps = this.db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'sweeps'").get() as { sql: string };
    if (!sweeps.sql.includes("not-recorded")) {
      this.copyTable("sweeps", SWEEP_COLUMNS, "nullifier_hash, payer, amount, outcome, deposit_tx_hash, swept_at");
    }
  }

  /**
   * SQLite can neither drop a NOT NULL nor change a CHECK: `table` is copied into one of `columns` (foreign keys off
   * meanwhile, as its docs say).
   */
  private copyTable(table: string, columns: string, names: string): void {
    this.db.exec("PRAGMA foreign_keys = OFF");
    try {
      this.db.exec(`BEGIN IMMEDIATE;
        CREATE TABLE ${table}_migrated (${columns});
        INSERT INTO ${table}_migrated (${names}) SELECT ${names} FROM ${table};
        DROP TABLE ${table};
        ALTER TABLE ${table}_migrated RENAME TO ${table};
        COMMIT;`);
    } catch (error) {
      if (this.db.isTransaction) this.db.exec("ROLLBACK");
      throw error;
    } finally {
      this.db.exec("PRAGMA foreign_keys = ON");
    }
  }

  async recordAuthorization(record: AuthorizationRecord): Promise<boolean> {
    const result = this.statement(
        `INSERT INTO authorizations (nullifier_hash, network, access_token_tx_hash, amount, authorized_at, label)
         VALUES (?, ?, ?, ?, ?, NULL)
         ON CONFLICT (nullifier_hash) DO UPDATE SET network = excluded.network, access_token_tx_hash = excluded.access_token_tx_hash,
           amount = excluded.amount, authorized_at = excluded.authorized_at, label = NULL
         WHERE authorizations.access_token_tx_hash = '${INHERITED}'`,
      )
      .run(record.nullifierHash.toString(), record.network, record.accessTokenTxHash.toLowerCase(), record.amount.toString(), record.authorizedAt);
    return result.changes === 1;
  }

  async claimSellerPayment(nullifierHash: bigint, leaseSeconds: number): Promise<boolean> {
    const now = Math.floor(Date.now() / 1000);
    const claim = this.statement(
      `INSERT INTO seller_relay_claims (nullifier_hash, lease_until) VALUES (?, ?)
       ON CONFLICT (nullifier_hash) DO UPDATE SET lease_until = excluded.lease_until WHERE seller_relay_claims.lease_until <= ?`,
    );
    return claim.run(nullifierHash.toString(), now + leaseSeconds, now).changes === 1;
  }

  async releaseSellerPayment(nullifierHash: bigint): Promise<void> {
    this.statement("DELETE FROM seller_relay_claims WHERE nullifier_hash = ?").run(nullifierHash.toString());
  }

  async authorizationOf(nullifierHash: bigint): Promise<StoredAuthorization | undefined> {
    const row = this.statement("SELECT access_token_tx_hash, label FROM authorizations WHERE nullifier_hash = ?").get(nullifierHash.toString());
    return row === undefined ? undefined : toAuthorization(row);
  }

  async inheritAuthorization(spentNullifierHash: bigint, changeNullifierHash: bigint, label: bigint): Promise<void> {
    this.statement(
        `INSERT INTO authorizations (nullifier_hash, network, access_token_tx_hash, amount, authorized_at, label)
         SELECT ?, network, '${INHERITED}', '0', ?, ? FROM authorizations WHERE nullifier_hash = ?
         ON CONFLICT DO NOTHING`,
      )
      .run(changeNullifierHash.toString(), new Date().toISOString(), label.toString(), spentNullifierHash.toString());
  }

  async reserveLease(lease: LeaseRecord): Promise<boolean> {
    // Single statement: SQLite serialises writers, so of concurrent reservations exactly one changes a row.
    const result = this.statement(
        `INSERT INTO leases (nullifier_hash, token, state, fingerprint, recipient, gross, fee, change_commitment,
           remaining_value, funding_tx_hash, proof_time_ms, x_payment, valid_before, payment_nonce, refund_anchor, updated_at)
         VALUES (?, ?, 'reserved', ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?, ?)
         ON CONFLICT (nullifier_hash) DO UPDATE SET state = 'reserved', token = excluded.token,
           fingerprint = excluded.fingerprint, recipient = excluded.recipient, gross = excluded.gross, fee = excluded.fee,
           change_commitment = excluded.change_commitment, remaining_value = excluded.remaining_value,
           proof_time_ms = NULL, x_payment = excluded.x_payment,
           valid_before = excluded.valid_before, payment_nonce = excluded.payment_nonce,
           refund_anchor = excluded.refund_anchor, updated_at = excluded.updated_at
         WHERE leases.state = 'failed'`,
      )
      .run(...reservedLeaseValues(lease));
    return result.changes === 1;
  }

  async getLease(nullifierHash: bigint): Promise<LeaseRecord | undefined> {
    const row = this.statement("SELECT * FROM leases WHERE nullifier_hash = ?").get(nullifierHash.toString());
    return row === undefined ? undefined : toLease(row);
  }

  async advanceLease(
    nullifierHash: bigint,
    token: string,
    from: LeaseState,
    to: LeaseState,
    fields: { fundingTxHash?: string; proofTimeMs?: number } = {},
  ): Promise<boolean> {
    const result = this.statement(
        `UPDATE leases SET state = ?, funding_tx_hash = COALESCE(?, funding_tx_hash),
           proof_time_ms = COALESCE(?, proof_time_ms), updated_at = ?
         WHERE nullifier_hash = ? AND token = ? AND state = ?`,
      )
      .run(to, fields.fundingTxHash ?? null, fields.proofTimeMs ?? null, new Date().toISOString(), nullifierHash.toString(), token, from);
    return result.changes === 1;
  }

  async leaseCounts(): Promise<Record<LeaseState, number>> {
    const rows = this.statement(`SELECT state, COUNT(*) AS count FROM leases GROUP BY state`).all();
    return countsByState(rows.map((row) => [String(row.state), Number(row.count)]));
  }

  async exclusively(_lock: string, work: () => Promise<void>): Promise<boolean> {
    await work();
    return true;
  }

  async expiredUnsweptLeases(nowSeconds: number): Promise<LeaseRecord[]> {
    return this.statement(
        `SELECT leases.* FROM leases LEFT JOIN sweeps USING (nullifier_hash)
         WHERE leases.state = 'settled' AND leases.x_payment IS NOT NULL AND leases.valid_before <= ?
           AND sweeps.nullifier_hash IS NULL
         ORDER BY leases.valid_before, leases.nullifier_hash`,
      )
      .all(nowSeconds)
      .map(toLease);
  }

  async recordSweep(record: SweepRecord): Promise<void> {
    this.statement(
        `INSERT INTO sweeps (nullifier_hash, payer, amount, outcome, deposit_tx_hash, swept_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (nullifier_hash) DO UPDATE SET amount = excluded.amount, outcome = excluded.outcome,
           deposit_tx_hash = excluded.deposit_tx_hash, swept_at = excluded.swept_at`,
      )
      .run(...sweepValues(record));
  }

  async getSweep(nullifierHash: bigint): Promise<SweepRecord | undefined> {
    const row = this.statement("SELECT * FROM sweeps WHERE nullifier_hash = ?").get(nullifierHash.toString());
    return row === undefined ? undefined : toSweep(row);
  }

  async createAgent(agent: AgentRecord): Promise<void> {
    this.statement(
        `INSERT INTO agents (id, name, public_key, owner_wallet, per_transaction_limit, daily_limit,
           provider_whitelist, categories, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(...agentValues(agent));
  }

  async getAgent(id: string): Promise<AgentRecord | undefined> {
    const row = this.statement("SELECT * FROM agents WHERE id = ?").get(id);
    return row === undefined ? undefined : toAgent(row);
  }

  async listAgents(): Promise<AgentRecord[]> {
    return this.statement("SELECT * FROM agents ORDER BY created_at, id").all().map(toAgent);
  }

  async agentSpend(id: string, day: string): Promise<AgentSpend> {
    const rows = this.statement("SELECT day, amount, count FROM agent_spend WHERE agent_id = ?").all(id);
    let totalSpent = 0n;
    let spentToday = 0n;
    let transactionCount = 0;
    for (const row of rows) {
      totalSpent += BigInt(String(row.amount));
      transactionCount += Number(row.count);
      if (row.day === day) spentToday = BigInt(String(row.amount));
    }
    return { totalSpent, spentToday, transactionCount };
  }

  async recordAgentSpend(id: string, amount: bigint, day: string): Promise<void> {
    // Amounts are TEXT, so the sum is computed here inside one transaction rather than in SQL.
    guarded(() => this.db.exec("BEGIN IMMEDIATE"));
    try {
      const row = this.statement("SELECT amount, count FROM agent_spend WHERE agent_id = ? AND day = ?").get(id, day);
      const amountSoFar = row === undefined ? 0n : BigInt(String(row.amount));
      const countSoFar = row === undefined ? 0 : Number(row.count);
      this.statement(
          `INSERT INTO agent_spend (agent_id, day, amount, count) VALUES (?, ?, ?, ?)
           ON CONFLICT (agent_id, day) DO UPDATE SET amount = excluded.amount, count = excluded.count`,
        )
        .run(id, day, (amountSoFar + amount).toString(), countSoFar + 1);
      this.db.exec("COMMIT");
    } catch (error) {
      this.db.exec("ROLLBACK");
      throw error;
    }
  }

  async close(): Promise<void> {
    this.db.close();
  }

  private statement(sql: string) {
    const prepared = guarded(() => this.db.prepare(sql));
    return {
      run: (...params: SQLInputValue[]) => guarded(() => prepared.run(...params)),
      get: (...params: SQLInputValue[]) => guarded(() => prepared.get(...params)),
      all: (...params: SQLInputValue[]) => guarded(() => prepared.all(...params)),
    };
  }
}

/** Runs one SQLite call; a file another writer held past the busy timeout answers STORE_UNAVAILABLE. */
function guarded<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw isSqliteBusy(error) ? storeUnavailable() : error;
  }
}

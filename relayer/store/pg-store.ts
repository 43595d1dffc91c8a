import type pg from "pg";
import { openDatabase, type PostgresOptions, type PostgresTimeouts } from "../../lib/postgres.js";
import {
  countsByState,
  type AgentRecord,
  type AgentSpend,
  type AuthorizationRecord,
  type LeaseRecord,
  type LeaseState,
  type RelayerStore,
  type StoredAuthorization,
  type SweepRecord,
} from "./relayer-store.js";
import { agentValues, INHERITED, reservedLeaseValues, sweepValues, toAgent, toAuthorization, toLease, toSweep, type Row } from "./rows.js";
import { isDroppedPgConnection, isPgUnavailable, storeUnavailable } from "./store-faults.js";

/** The relayer's session limits: no request hangs on a held row lock or a stuck statement (lib/postgres.ts). */
const RELAYER_TIMEOUTS: PostgresTimeouts = { statementMs: 10_000, lockMs: 5_000, connectMs: 5_000 };

// Amounts and field elements are NUMERIC(78): exact up to 10^78 > 2^256, read back as decimal strings.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS authorizations (
  nullifier_hash NUMERIC(78) PRIMARY KEY, network TEXT NOT NULL, access_token_tx_hash TEXT NOT NULL,
  amount NUMERIC(78) NOT NULL, authorized_at TEXT NOT NULL, label NUMERIC(78));
ALTER TABLE authorizations ADD COLUMN IF NOT EXISTS label NUMERIC(78);
DROP INDEX IF EXISTS authorizations_by_tx;
CREATE TABLE IF NOT EXISTS agents (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, public_key TEXT NOT NULL, owner_wallet TEXT NOT NULL,
  per_transaction_limit NUMERIC(78) NOT NULL, daily_limit NUMERIC(78) NOT NULL, provider_whitelist TEXT NOT NULL,
  categories TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leases (
  nullifier_hash NUMERIC(78) PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('reserved', 'withdrawing', 'settled', 'failed')), token TEXT NOT NULL,
  fingerprint TEXT NOT NULL, recipient TEXT NOT NULL, gross NUMERIC(78) NOT NULL, fee NUMERIC(78) NOT NULL,
  change_commitment NUMERIC(78) NOT NULL, remaining_value NUMERIC(78), funding_tx_hash TEXT,
  proof_time_ms INTEGER, x_payment TEXT, valid_before BIGINT, payment_nonce TEXT,
  refund_anchor NUMERIC(78), updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sweeps (
  nullifier_hash NUMERIC(78) PRIMARY KEY REFERENCES leases (nullifier_hash), payer TEXT NOT NULL,
  amount NUMERIC(78) NOT NULL, outcome TEXT NOT NULL, deposit_tx_hash TEXT, swept_at TEXT NOT NULL,
  CONSTRAINT sweeps_outcome_check CHECK (outcome IN ('deposited', 'used', 'not-recorded', 'empty', 'held')));
DROP TABLE IF EXISTS seller_payments;
CREATE TABLE IF NOT EXISTS seller_relay_claims (nullifier_hash NUMERIC(78) PRIMARY KEY, lease_until BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS agent_spend (
  agent_id TEXT NOT NULL REFERENCES agents (id), day TEXT NOT NULL, amount NUMERIC(78) NOT NULL,
  count INTEGER NOT NULL, PRIMARY KEY (agent_id, day));
ALTER TABLE leases ADD COLUMN IF NOT EXISTS token TEXT NOT NULL DEFAULT '';
ALTER TABLE leases ALTER COLUMN remaining_value DROP NOT NULL;
ALTER TABLE leases ADD COLUMN IF NOT EXISTS payment_nonce TEXT;
ALTER TABLE leases ADD COLUMN IF NOT EXISTS refund_anchor NUMERIC(78);
ALTER TABLE sweeps DROP CONSTRAINT IF EXISTS sweeps_outcome_check;
ALTER TABLE sweeps ADD CONSTRAINT sweeps_outcome_check CHECK (outcome IN ('deposited', 'used', 'not-recorded', 'empty', 'held'));
`;

/**
 * The relayer's state in PostgreSQL (`RELAYER_DATABASE_URL`), shared by several relayer processes. Every write
 * that must not interleave with another process's is one statement that PostgreSQL makes atomic: an
 * `INSERT ... ON CONFLICT DO UPDATE ... WHERE` locks the conflicting row and checks the condition on its latest
 * version, and an `UPDATE ... WHERE token = $token AND state = $from` re-checks the condition after waiting for a
 * concurrent update.
 *
 * A database that cannot serve a query now answers STORE_UNAVAILABLE (store-faults.ts); a query that only reads,
 * or writes what it would write again, is repeated once on a fresh connection when its connection was dropped.
 */
export class PgRelayerStore implements RelayerStore {
  private constructor(private readonly pool: pg.Pool) {}

  /** Connects and creates the tables when missing; safe when several relayers start at once. */
  static async open(options: PostgresOptions): Promise<PgRelayerStore> {
    return new PgRelayerStore(await openDatabase(options, "x402-relayer-schema", SCHEMA, RELAYER_TIMEOUTS));
  }

  async recordAuthorization(record: AuthorizationRecord): Promise<boolean> {
    return this.changedOne(
      `INSERT INTO authorizations (nullifier_hash, network, access_token_tx_hash, amount, authorized_at, label)
       VALUES ($1, $2, $3, $4, $5, NULL)
       ON CONFLICT (nullifier_hash) DO UPDATE SET network = excluded.network, access_token_tx_hash = excluded.access_token_tx_hash,
         amount = excluded.amount, authorized_at = excluded.authorized_at, label = NULL
       WHERE authorizations.access_token_tx_hash = '${INHERITED}'`,
      [
        record.nullifierHash.toString(),
        record.network,
        record.accessTokenTxHash.toLowerCase(),
        record.amount.toString(),
        record.authorizedAt,
      ],
    );
  }

  async claimSellerPayment(nullifierHash: bigint, leaseSeconds: number): Promise<boolean> {
    const now = Math.floor(Date.now() / 1000);
    return this.changedOne(
      `INSERT INTO seller_relay_claims AS claimed (nullifier_hash, lease_until) VALUES ($1, $2)
       ON CONFLICT (nullifier_hash) DO UPDATE SET lease_until = EXCLUDED.lease_until WHERE claimed.lease_until <= $3`,
      [nullifierHash.toString(), now + leaseSeconds, now],
    );
  }

  async releaseSellerPayment(nullifierHash: bigint): Promise<void> {
    await this.query("DELETE FROM seller_relay_claims WHERE nullifier_hash = $1", [nullifierHash.toString()], { idempotent: true });
  }

  async authorizationOf(nullifierHash: bigint): Promise<StoredAuthorization | undefined> {
    const [row] = await this.all("SELECT access_token_tx_hash, label FROM authorizations WHERE nullifier_hash = $1", [nullifierHash.toString()]);
    return row === undefined ? undefined : toAuthorization(row);
  }

  async inheritAuthorization(spentNullifierHash: bigint, changeNullifierHash: bigint, label: bigint): Promise<void> {
    await this.query(
      `INSERT INTO authorizations (nullifier_hash, network, access_token_tx_hash, amount, authorized_at, label)
       SELECT $1, network, '${INHERITED}', 0, $2, $3 FROM authorizations WHERE nullifier_hash = $4
       ON CONFLICT DO NOTHING`,
      [changeNullifierHash.toString(), new Date().toISOString(), label.toString(), spentNullifierHash.toString()],
      { idempotent: true },
    );
  }

  async reserveLease(lease: LeaseRecord): Promise<boolean> {
    return this.changedOne(
      `INSERT INTO leases (nullifier_hash, token, state, fingerprint, recipient, gross, fee, change_commitment,
         remaining_value, funding_tx_hash, proof_time_ms, x_payment, valid_before, payment_nonce, refund_anchor, updated_at)
       VALUES ($1, $2, 'reserved', $3, $4, $5, $6, $7, $8, NULL, NULL, $9, $10, $11, $12, $13)
       ON CONFLICT (nullifier_hash) DO UPDATE SET state = 'reserved', token = excluded.token,
         fingerprint = excluded.fingerprint, recipient = excluded.recipient, gross = excluded.gross, fee = excluded.fee,
         change_commitment = excluded.change_commitment, remaining_value = excluded.remaining_value,
         proof_time_ms = NULL, x_payment = excluded.x_payment,
         valid_before = excluded.valid_before, payment_nonce = excluded.payment_nonce,
         refund_anchor = excluded.refund_anchor, updated_at = excluded.updated_at
       WHERE leases.state = 'failed'`,
      reservedLeaseValues(lease),
    );
  }

  async getLease(nullifierHash: bigint): Promise<LeaseRecord | undefined> {
    const [row] = await this.all("SELECT * FROM leases WHERE nullifier_hash = $1", [nullifierHash.toString()]);
    return row === undefined ? undefined : toLease(row);
  }

  async advanceLease(
    nullifierHash: bigint,
    token: string,
    from: LeaseState,
    to: LeaseState,
    fields: { fundingTxHash?: string; proofTimeMs?: number } = {},
  ): Promise<boolean> {
    return this.changedOne(
      `UPDATE leases SET state = $1, funding_tx_hash = COALESCE($2, funding_tx_hash),
         proof_time_ms = COALESCE($3, proof_time_ms), updated_at = $4
       WHERE nullifier_hash = $5 AND token = $6 AND state = $7`,
      [
        to,
        fields.fundingTxHash ?? null,
        fields.proofTimeMs ?? null,
        new Date().toISOString(),
        nullifierHash.toString(),
        token,
        from,
      ],
    );
  }

  async leaseCounts(): Promise<Record<LeaseState, number>> {
    const rows = await this.all(`SELECT state, COUNT(*)::int AS count FROM leases GROUP BY state`);
    return countsByState(rows.map((row) => [String(row.state), Number(row.count)]));
  }

  async exclusively(lock: string, work: () => Promise<void>): Promise<boolean> {
    // A session lock lives as long as its connection: the run holds one client of the pool from start to end.
    const client = await this.pool.connect().catch((error: unknown) => {
      throw asStoreError(error);
    });
    let broken = false;
    try {
      const taken = await client.query<Row>("SELECT pg_try_advisory_lock(hashtext($1)) AS taken", [lock]);
      if (taken.rows[0]?.taken !== true) return false;
      try {
        await work();
      } finally {
        // A connection that cannot unlock is destroyed below, which ends its session and the lock with it.
        await client.query("SELECT pg_advisory_unlock(hashtext($1))", [lock]).catch(() => (broken = true));
      }
      return true;
    } catch (error) {
      broken ||= isDroppedPgConnection(error);
      throw asStoreError(error);
    } finally {
      client.release(broken);
    }
  }

  async expiredUnsweptLeases(nowSeconds: number): Promise<LeaseRecord[]> {
    const rows = await this.all(
      `SELECT leases.* FROM leases LEFT JOIN sweeps USING (nullifier_hash)
       WHERE leases.state = 'settled' AND leases.x_payment IS NOT NULL AND leases.valid_before <= $1
         AND sweeps.nullifier_hash IS NULL
       ORDER BY leases.valid_before, leases.nullifier_hash`,
      [nowSeconds],
    );
    return rows.map(toLease);
  }

  async recordSweep(record: SweepRecord): Promise<void> {
    await this.query(
      `INSERT INTO sweeps (nullifier_hash, payer, amount, outcome, deposit_tx_hash, swept_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (nullifier_hash) DO UPDATE SET amount = excluded.amount, outcome = excluded.outcome,
         deposit_tx_hash = excluded.deposit_tx_hash, swept_at = excluded.swept_at`,
      sweepValues(record),
      { idempotent: true },
    );
  }

  async getSweep(nullifierHash: bigint): Promise<SweepRecord | undefined> {
    const [row] = await this.all("SELECT * FROM sweeps WHERE nullifier_hash = $1", [nullifierHash.toString()]);
    return row === undefined ? undefined : toSweep(row);
  }

  async createAgent(agent: AgentRecord): Promise<void> {
    await this.query(
      `INSERT INTO agents (id, name, public_key, owner_wallet, per_transaction_limit, daily_limit,
         provider_whitelist, categories, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      agentValues(agent),
      { idempotent: false },
    );
  }

  async getAgent(id: string): Promise<AgentRecord | undefined> {
    const [row] = await this.all("SELECT * FROM agents WHERE id = $1", [id]);
    return row === undefined ? undefined : toAgent(row);
  }

  async listAgents(): Promise<AgentRecord[]> {
    // Byte order, as SQLite sorts text, whatever the database's collation.
    return (await this.all(`SELECT * FROM agents ORDER BY created_at COLLATE "C", id COLLATE "C"`)).map(toAgent);
  }

  async agentSpend(id: string, day: string): Promise<AgentSpend> {
    const rows = await this.all(
      `SELECT COALESCE(SUM(amount), 0) AS total, COALESCE(SUM(amount) FILTER (WHERE day = $2), 0) AS today,
         COALESCE(SUM(count), 0) AS count
       FROM agent_spend WHERE agent_id = $1`,
      [id, day],
    );
    // An aggregate without GROUP BY answers exactly one row, zeros when the agent spent nothing.
    const { total, today, count } = rows[0]!;
    return { totalSpent: BigInt(String(total)), spentToday: BigInt(String(today)), transactionCount: Number(count) };
  }

  async recordAgentSpend(id: string, amount: bigint, day: string): Promise<void> {
    // The sum is taken on the locked row itself, so two relayers recording at once never lose one of the spends.
    await this.query(
      `INSERT INTO agent_spend (agent_id, day, amount, count) VALUES ($1, $2, $3, 1)
       ON CONFLICT (agent_id, day) DO UPDATE SET amount = agent_spend.amount + excluded.amount,
         count = agent_spend.count + 1`,
      [id, day, amount.toString()],
      { idempotent: false },
    );
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** Runs one read, repeated once when its connection was dropped. */
  private async all(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await this.query(sql, params, { idempotent: true })).rows;
  }

  /** Runs one write, never repeated (a repeat could not tell its own effect from another's); true when it changed exactly one row. */
  private async changedOne(sql: string, params: unknown[]): Promise<boolean> {
    return (await this.query(sql, params, { idempotent: false })).rowCount === 1;
  }

  private async query(sql: string, params: unknown[], { idempotent }: { idempotent: boolean }): Promise<pg.QueryResult<Row>> {
    try {
      return await this.pool.query<Row>(sql, params);
    } catch (error) {
      if (!idempotent || !isDroppedPgConnection(error)) throw asStoreError(error);
      return this.pool.query<Row>(sql, params).catch((again: unknown) => {
        throw asStoreError(again);
      });
    }
  }
}

function asStoreError(error: unknown): unknown {
  return isPgUnavailable(error) ? storeUnavailable() : error;
}

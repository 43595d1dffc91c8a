import pg from "pg";
import { leaseToken, PruneSchedule, SERVED_RETENTION_SECONDS, type ServedPayments, type ServeStart } from "./served-payments.js";

const TABLE = "x402_served_payments";

const DDL = `CREATE TABLE IF NOT EXISTS ${TABLE} (
  payment_id TEXT PRIMARY KEY, valid_before BIGINT NOT NULL, served BOOLEAN NOT NULL, token TEXT NOT NULL, lease_until BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS ${TABLE}_by_valid_before ON ${TABLE} (valid_before);
CREATE INDEX IF NOT EXISTS ${TABLE}_unanswered ON ${TABLE} (lease_until) WHERE NOT served`;

/**
 * The served-payment record in PostgreSQL, shared by every instance of a seller (ServedPayments). Each call is one
 * statement: the lease is taken by an insert, or by an update of a lease that ended, so two instances presented the
 * same payment at once get one `serve` between them.
 */
export class PostgresServedPayments implements ServedPayments {
  private readonly pruning = new PruneSchedule();

  private constructor(
    private readonly pool: pg.Pool,
    private readonly ownsPool: boolean,
    private readonly nowSeconds: () => number,
  ) {}

  /** Opens the record on `database` (a pool of the seller's, or a connection URL) and creates its table if missing. */
  static async open(database: pg.Pool | string, nowSeconds: () => number = () => Math.floor(Date.now() / 1000)): Promise<PostgresServedPayments> {
    const ownsPool = typeof database === "string";
    const pool = typeof database === "string" ? new pg.Pool({ connectionString: database }) : database;
    try {
      const client = await pool.connect();
      try {
        // Two instances starting at once would race on the catalog.
        await client.query("BEGIN");
        await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [TABLE]);
        await client.query(DDL);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    } catch (error) {
      if (ownsPool) await pool.end();
      throw error;
    }
    return new PostgresServedPayments(pool, ownsPool, nowSeconds);
  }

  async begin(id: string, validBefore: number, leaseSeconds: number): Promise<ServeStart> {
    const now = this.nowSeconds();
    if (this.pruning.due(now)) await this.pool.query(`DELETE FROM ${TABLE} WHERE valid_before < $1`, [now - SERVED_RETENTION_SECONDS]);
    const token = leaseToken();
    const taken = await this.pool.query(
      `INSERT INTO ${TABLE} AS known (payment_id, valid_before, served, token, lease_until) VALUES ($1, $2, FALSE, $3, $4)
       ON CONFLICT (payment_id) DO UPDATE SET token = EXCLUDED.token, lease_until = EXCLUDED.lease_until
       WHERE NOT known.served AND known.lease_until <= $5`,
      [id, validBefore, token, now + leaseSeconds, now],
    );
    if (taken.rowCount === 1) return { outcome: "serve", token };
    const { rows } = await this.pool.query<{ served: boolean; lease_until: string }>(`SELECT served, lease_until FROM ${TABLE} WHERE payment_id = $1`, [id]);
    const [known] = rows;
    // Gone between the two statements (given back): the next presentation takes it.
    if (known === undefined) return { outcome: "busy", untilSeconds: now };
    return known.served ? { outcome: "served" } : { outcome: "busy", untilSeconds: Number(known.lease_until) };
  }

  async renew(id: string, token: string, leaseSeconds: number): Promise<boolean> {
    const renewed = await this.pool.query(`UPDATE ${TABLE} SET lease_until = $1 WHERE payment_id = $2 AND token = $3 AND NOT served`, [this.nowSeconds() + leaseSeconds, id, token]);
    return renewed.rowCount === 1;
  }

  async finish(id: string): Promise<void> {
    await this.pool.query(`UPDATE ${TABLE} SET served = TRUE WHERE payment_id = $1`, [id]);
  }

  async abandon(id: string, token: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${TABLE} WHERE payment_id = $1 AND token = $2 AND NOT served`, [id, token]);
  }

  async unanswered(withinSeconds: number): Promise<number> {
    const now = this.nowSeconds();
    const { rows } = await this.pool.query<{ count: string }>(`SELECT count(*) FROM ${TABLE} WHERE NOT served AND lease_until <= $1 AND lease_until > $2`, [now, now - withinSeconds]);
    return Number(rows[0]!.count);
  }

  /** Ends the pool when the record opened it from a URL. */
  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }
}

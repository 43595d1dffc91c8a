import { mkdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { leaseToken, PruneSchedule, SERVED_RETENTION_SECONDS, type ServedPayments, type ServeStart } from "./served-payments.js";

const SETUP = `PRAGMA busy_timeout = 5000;
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS served_payments (
  payment_id TEXT PRIMARY KEY, valid_before INTEGER NOT NULL, served INTEGER NOT NULL, token TEXT NOT NULL, lease_until INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS served_payments_by_valid_before ON served_payments (valid_before);
CREATE INDEX IF NOT EXISTS served_payments_unanswered ON served_payments (lease_until) WHERE NOT served`;

/**
 * The served-payment record in a SQLite file (ServedPayments): for the instances of a seller on one host, which
 * open the same file. Each call is one statement, so instances that share the file take a payment's lease once.
 */
export class SqliteServedPayments implements ServedPayments {
  private readonly db: DatabaseSync;
  private readonly pruning = new PruneSchedule();

  constructor(
    file: string,
    private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000),
  ) {
    if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
    this.db = new DatabaseSync(file);
    this.db.exec(SETUP);
  }

  async begin(id: string, validBefore: number, leaseSeconds: number): Promise<ServeStart> {
    const now = this.nowSeconds();
    if (this.pruning.due(now)) this.db.prepare("DELETE FROM served_payments WHERE valid_before < ?").run(now - SERVED_RETENTION_SECONDS);
    const token = leaseToken();
    const taken = this.db
      .prepare(
        `INSERT INTO served_payments (payment_id, valid_before, served, token, lease_until) VALUES (?, ?, 0, ?, ?)
         ON CONFLICT (payment_id) DO UPDATE SET token = excluded.token, lease_until = excluded.lease_until
         WHERE NOT served_payments.served AND served_payments.lease_until <= ?`,
      )
      .run(id, validBefore, token, now + leaseSeconds, now);
    if (Number(taken.changes) === 1) return { outcome: "serve", token };
    const known = this.db.prepare("SELECT served, lease_until FROM served_payments WHERE payment_id = ?").get(id) as { served: number; lease_until: number } | undefined;
    if (known === undefined) return { outcome: "busy", untilSeconds: now };
    return known.served === 1 ? { outcome: "served" } : { outcome: "busy", untilSeconds: Number(known.lease_until) };
  }

  async renew(id: string, token: string, leaseSeconds: number): Promise<boolean> {
    const renewed = this.db.prepare("UPDATE served_payments SET lease_until = ? WHERE payment_id = ? AND token = ? AND NOT served").run(this.nowSeconds() + leaseSeconds, id, token);
    return Number(renewed.changes) === 1;
  }

  async finish(id: string): Promise<void> {
    this.db.prepare("UPDATE served_payments SET served = 1 WHERE payment_id = ?").run(id);
  }

  async abandon(id: string, token: string): Promise<void> {
    this.db.prepare("DELETE FROM served_payments WHERE payment_id = ? AND token = ? AND NOT served").run(id, token);
  }

  async unanswered(withinSeconds: number): Promise<number> {
    const now = this.nowSeconds();
    const row = this.db.prepare("SELECT count(*) AS count FROM served_payments WHERE NOT served AND lease_until <= ? AND lease_until > ?").get(now, now - withinSeconds) as { count: number };
    return Number(row.count);
  }

  close(): void {
    this.db.close();
  }
}

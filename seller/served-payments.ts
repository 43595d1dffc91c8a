/**
 * Which shielded-proof payments a seller has answered, by the spent note's nullifier hash. The seller's facilitator
 * answers `success` for a payment the pool paid as often as it is asked (the chain is its record), so this is what
 * keeps one payment to one answer: a payment is served once, and a payment paid but not served (a crash, an answer
 * lost, a stranger settling a copied header first) is served when it is presented again.
 *
 * Every instance of a seller must share one record, and it must outlive restarts: PostgresServedPayments or
 * SqliteServedPayments (one host). MemoryServedPayments is for a seller that runs one process and accepts that a
 * restart forgets what it served.
 */
export interface ServedPayments {
  /**
   * Takes payment `id` for one answer, for `leaseSeconds`: `serve` when it is this caller's to serve, `served` when
   * it was answered already, `busy` while another request is serving it (until its lease ends: a server that died
   * serving it leaves the payment to the next presentation). `validBefore` (unix seconds) is the payment's window.
   */
  begin(id: string, validBefore: number, leaseSeconds: number): Promise<ServeStart>;
  /**
   * Extends the lease of `token` on payment `id` to `leaseSeconds` from now, while the request holding it is handled:
   * true while that request still holds it, false once it was given back, taken over after it ended, or served.
   */
  renew(id: string, token: string, leaseSeconds: number): Promise<boolean>;
  /** The request paid by `id` was answered: the payment is spent on it for good. */
  finish(id: string): Promise<void>;
  /** The request was not answered (refused, failed, not settled): the lease of `token` is given back. */
  abandon(id: string, token: string): Promise<void>;
  /**
   * How many payments a request held until its lease lapsed, in the last `withinSeconds`, and no request has answered
   * since: a server that died serving them (paid or not), whose buyers have not presented them again.
   */
  unanswered(withinSeconds: number): Promise<number>;
}

export type ServeStart = { outcome: "serve"; token: string } | { outcome: "served" } | { outcome: "busy"; untilSeconds: number };

/** How long a served payment is remembered after its window closed; an older payment is not answered again. */
export const SERVED_RETENTION_SECONDS = 7 * 24 * 3600;

/** How often a store drops the records past their retention: off the path of nearly every request. */
const PRUNE_EVERY_SECONDS = 600;

/** When a store drops its expired records: at most once every PRUNE_EVERY_SECONDS. */
export class PruneSchedule {
  private lastPruned = -Infinity;

  due(now: number): boolean {
    if (now - this.lastPruned < PRUNE_EVERY_SECONDS) return false;
    this.lastPruned = now;
    return true;
  }
}

/** Payments served by this process, forgotten on restart: for a seller that runs one process and says so. */
export class MemoryServedPayments implements ServedPayments {
  private readonly payments = new Map<string, { validBefore: number; served: boolean; token: string; leaseUntil: number }>();
  private readonly pruning = new PruneSchedule();

  constructor(private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000)) {}

  async begin(id: string, validBefore: number, leaseSeconds: number): Promise<ServeStart> {
    const now = this.nowSeconds();
    if (this.pruning.due(now)) for (const [key, payment] of this.payments) if (payment.validBefore + SERVED_RETENTION_SECONDS < now) this.payments.delete(key);
    const known = this.payments.get(id);
    if (known?.served) return { outcome: "served" };
    if (known !== undefined && known.leaseUntil > now) return { outcome: "busy", untilSeconds: known.leaseUntil };
    const token = leaseToken();
    this.payments.set(id, { validBefore, served: false, token, leaseUntil: now + leaseSeconds });
    return { outcome: "serve", token };
  }

  async renew(id: string, token: string, leaseSeconds: number): Promise<boolean> {
    const known = this.payments.get(id);
    if (known === undefined || known.served || known.token !== token) return false;
    known.leaseUntil = this.nowSeconds() + leaseSeconds;
    return true;
  }

  async finish(id: string): Promise<void> {
    const known = this.payments.get(id);
    if (known !== undefined) known.served = true;
  }

  async abandon(id: string, token: string): Promise<void> {
    const known = this.payments.get(id);
    if (known !== undefined && !known.served && known.token === token) this.payments.delete(id);
  }

  async unanswered(withinSeconds: number): Promise<number> {
    const now = this.nowSeconds();
    return [...this.payments.values()].filter(({ served, leaseUntil }) => !served && leaseUntil <= now && leaseUntil > now - withinSeconds).length;
  }
}

/** A fresh lease's token: who holds it, so that a lease taken over is not given back by its first holder. */
export function leaseToken(): string {
  return crypto.randomUUID();
}

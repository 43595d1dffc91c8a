import { Counter, Gauge, type Registry } from "prom-client";
import type { ServedPayments } from "./served-payments.js";

/** The window of `shielded_seller_payments_unanswered`: leases that lapsed in the last 30 minutes. */
export const UNANSWERED_WINDOW_SECONDS = 1800;

/**
 * A seller's server's shielded-proof payments in Prometheus (docs/operations.md, "Seller payments"): those it served,
 * those it did not take now (by reason: refused, or an outage or a payment busy elsewhere), and, read from its record
 * at each scrape, the payments a request held until its lease lapsed in the last 30 minutes and no request has
 * answered since: a server that died serving them, whose buyers have not come back. Paid or not, the chain says.
 */
export class ServeMetrics {
  readonly served: Counter;
  readonly notTaken: Counter<"reason">;

  constructor(registry: Registry, record: ServedPayments) {
    const registers = [registry];
    this.served = new Counter({ name: "shielded_seller_payments_served_total", help: "Shielded-proof payments this seller answered, each once", registers });
    this.notTaken = new Counter({
      name: "shielded_seller_payments_not_taken_total",
      help: "Shielded-proof payments this seller did not take before verifying, by reason (answered already, busy elsewhere, its record unreachable)",
      labelNames: ["reason"] as const,
      registers,
    });
    this.served.inc(0);
    new Gauge({
      name: "shielded_seller_payments_unanswered",
      help: "Payments a request of this seller held until its lease lapsed in the last 30 minutes, unanswered since: a server that died serving them",
      registers,
      async collect() {
        this.set(await record.unanswered(UNANSWERED_WINDOW_SECONDS));
      },
    });
  }
}

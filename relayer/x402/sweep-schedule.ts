import type { Logger } from "pino";
import { claimTreasuryFees } from "../chain/fee-claim.js";
import type { RelayerMetrics } from "../ops/metrics.js";
import { sweepExpiredPayers, type PayerSweepDeps } from "./payer-sweep.js";

export interface SweepScheduleDeps extends Omit<PayerSweepDeps, "log"> {
  metrics: RelayerMetrics;
  logger: Logger;
  /** Between the end of one sweep and the start of the next. */
  intervalMs: number;
  /** Receives the takes the relays accrued in the pool, claimed each round once they reach `feeClaimMinimum`. */
  treasury: string;
  feeClaimMinimum: bigint;
}

export type SweepRunResult = "done" | "failed" | "skipped";

/** The lock that lets one relayer of those sharing a PostgreSQL database sweep at a time. */
const SWEEP_LOCK = "relayer:payer-sweep";

/**
 * Runs the payer sweep (relayer/x402/payer-sweep.ts) inside the relayer: at start, then every `intervalMs` after
 * the previous run ended, and then claims the treasury's accrued fees when they reach the minimum
 * (relayer/chain/fee-claim.ts). Relayers sharing a PostgreSQL database take turns under an advisory lock: one sweeps,
 * the others skip that round and find the swept leases recorded next time. A failed run (an RPC outage, a key
 * without REFUNDER_ROLE) is logged and counted; the next round retries it, and a rerun loses nothing.
 */
export class SweepSchedule {
  private timer?: NodeJS.Timeout;
  private current?: Promise<SweepRunResult>;
  private stopped = false;

  constructor(private readonly deps: SweepScheduleDeps) {}

  start(): void {
    this.schedule(0);
  }

  /** One round now: swept, skipped (another relayer holds the lock) or failed. */
  runOnce(): Promise<SweepRunResult> {
    this.current ??= this.sweep().finally(() => (this.current = undefined));
    return this.current;
  }

  /** Stops scheduling and waits for a run in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.current;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.runOnce().then(() => this.schedule(this.deps.intervalMs)), delayMs);
    this.timer.unref();
  }

  private async sweep(): Promise<SweepRunResult> {
    const { store, chain, metrics, logger } = this.deps;
    let result: SweepRunResult;
    try {
      const ran = await store.exclusively(SWEEP_LOCK, async () => {
        const records = await sweepExpiredPayers({ ...this.deps, log: (line) => logger.info({ sweep: line }, "payer swept") });
        metrics.recordSweep(records, 0);
        if (records.length > 0) logger.info({ payers: records.length, refunded: records.filter((r) => r.outcome === "deposited").length }, "payer sweep done");
        const fees = await claimTreasuryFees(chain, this.deps.treasury, this.deps.feeClaimMinimum);
        metrics.treasuryAccruedFees.set(Number(fees.owed));
        if (fees.claim) logger.info({ claimed: fees.claim.amount.toString(), txHash: fees.claim.txHash }, "treasury fees claimed");
      });
      result = ran ? "done" : "skipped";
    } catch (error) {
      result = "failed";
      logger.error({ err: error instanceof Error ? error.message : String(error) }, "payer sweep failed; the next round retries it");
      // What is left to sweep, for the backlog alert; unknown while the chain or the database is down.
      const latest = await chain.call(() => chain.provider.getBlock("latest")).catch(() => null);
      const left = latest === null ? undefined : await store.expiredUnsweptLeases(latest.timestamp).catch(() => undefined);
      if (left !== undefined) metrics.sweepBacklog.set(left.length);
    }
    metrics.sweepRuns.inc({ result });
    return result;
  }
}

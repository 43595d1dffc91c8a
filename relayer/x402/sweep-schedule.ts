import type { Logger } from "pino";
import { claimTreasuryFees } from "../chain/fee-claim.js";
import type { RelayerMetrics } from "../ops/metrics.js";
import { expiredPayersWaiting, sweepExpiredPayers, type PayerSweepDeps } from "./payer-sweep.js";

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

const SWEEP_FAILED = "payer sweep failed; the next round retries it";

/** The lock that lets one relayer of those sharing a PostgreSQL database sweep at a time. */
const SWEEP_LOCK = "relayer:payer-sweep";

/**
 * Runs the payer sweep (relayer/x402/payer-sweep.ts) inside the relayer: at start, then every `intervalMs` after
 * the previous run ended, and then claims the treasury's accrued fees when they reach the minimum
 * (relayer/chain/fee-claim.ts), whatever the payers' part did. Relayers sharing a PostgreSQL database take turns
 * under an advisory lock: one sweeps, the others skip that round and find the swept leases recorded next time. A
 * payer whose refund fails is logged with its nullifier hash and counted (`relayer_sweep_payers_total{outcome="failed"}`)
 * and the round goes on; a round that cannot sweep at all (an RPC outage, a key without gas) or claim is
 * logged and counted failed. The next round retries either, and a rerun loses nothing.
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
    const { metrics, logger } = this.deps;
    let failed = false;
    const fail = (message: string) => (error: unknown) => {
      failed = true;
      logger.error({ code: (error as { code?: unknown }).code, err: error instanceof Error ? error.message : String(error) }, message);
    };
    const ran = await this.deps.store
      .exclusively(SWEEP_LOCK, async () => {
        await this.sweepPayers().catch(fail(SWEEP_FAILED));
        await this.claimFees().catch(fail("treasury fee claim failed; the next round retries it"));
      })
      .catch((error: unknown) => {
        fail(SWEEP_FAILED)(error);
        return true;
      });
    const result: SweepRunResult = !ran ? "skipped" : failed ? "failed" : "done";
    metrics.sweepRuns.inc({ result });
    // What is left to sweep, for the backlog alert; unknown while the chain or the database is down.
    await expiredPayersWaiting(this.deps).then(
      (waiting) => metrics.sweepBacklog.set(waiting),
      () => undefined,
    );
    return result;
  }

  private async sweepPayers(): Promise<void> {
    const { metrics, logger } = this.deps;
    const round = await sweepExpiredPayers(this.deps);
    metrics.recordSweep(round.records, round.failures.length);
    for (const record of round.records) {
      logger.info({ payer: record.payer, nullifierHash: record.nullifierHash.toString(), outcome: record.outcome, amount: record.amount.toString(), txHash: record.depositTxHash }, "payer swept");
    }
    for (const failure of round.failures) {
      logger.error({ payer: failure.payer, nullifierHash: failure.nullifierHash.toString(), reason: failure.reason }, "payer refund failed; the next round retries it");
    }
    if (round.records.length > 0 || round.failures.length > 0) {
      logger.info({ payers: round.records.length, refunded: round.records.filter((r) => r.outcome === "deposited").length, failed: round.failures.length }, "payer sweep done");
    }
  }

  private async claimFees(): Promise<void> {
    const { chain, metrics, logger } = this.deps;
    const fees = await claimTreasuryFees(chain, this.deps.treasury, this.deps.feeClaimMinimum);
    metrics.treasuryAccruedFees.set(Number(fees.owed));
    if (fees.claim) logger.info({ claimed: fees.claim.amount.toString(), txHash: fees.claim.txHash }, "treasury fees claimed");
  }
}

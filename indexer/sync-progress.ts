import type { Logger } from "pino";

const REPORT_EVERY_MS = 2_000;

/** Progress lines of one catch-up pass: throttled while cold, so a long first sync shows where it is. */
export class SyncProgress {
  private readonly startedAt = performance.now();
  private lastReportAt = this.startedAt;
  private events = 0;

  constructor(
    private readonly logger: Logger,
    private readonly fromBlock: number,
    private readonly targetBlock: number,
    private readonly cold: boolean,
  ) {}

  batchDone(toBlock: number, events: number, leafCount: number): void {
    this.events += events;
    const now = performance.now();
    if (!this.cold || now - this.lastReportAt < REPORT_EVERY_MS) return;
    this.lastReportAt = now;
    const span = Math.max(this.targetBlock - this.fromBlock + 1, 1);
    const percent = Math.floor((100 * (toBlock - this.fromBlock + 1)) / span);
    this.logger.info(
      { block: toBlock, targetBlock: this.targetBlock, percent, events: this.events, leafCount, eventsPerSecond: this.rate(now) },
      "cold sync progress",
    );
  }

  finished(leafCount: number): void {
    if (!this.cold && this.events === 0) return;
    this.logger.info(
      { targetBlock: this.targetBlock, events: this.events, leafCount, eventsPerSecond: this.rate(performance.now()) },
      this.cold ? "cold sync done" : "synced new blocks",
    );
  }

  private rate(now: number): number {
    return Math.round((this.events * 1000) / Math.max(now - this.startedAt, 1));
  }
}

import type { Clock } from "./rate-limit.js";
import { rateLimitRefusal } from "./rate-limit.js";

/** Answers of the trees route below this many bytes (a warm agent's few new leaves) are never paced. */
export const PACED_MIN_BYTES = 256 * 1024;
/** The longest a bulk answer is held back; one that would wait longer is refused with Retry-After instead. */
export const PACED_MAX_WAIT_MS = 10_000;

const SECOND_MS = 1_000;

/**
 * A bandwidth budget for the trees route's bulk answers (whole trees: 12 MiB at 100,000 leaves). Each costs the
 * relayer's cores and link in proportion to its size, so a few clients fetching whole trees in a loop would take the
 * cores the settlements need. Bulk answers leave at no more than `bytesPerSecond` together, in bursts of up to one
 * second's worth: one that finds the budget spent waits its turn (the client sees a slower download), and one that
 * would wait longer than PACED_MAX_WAIT_MS is refused 429 RATE_LIMITED with Retry-After. A warm agent's answer
 * (under PACED_MIN_BYTES) never waits.
 */
export class BulkAnswerPacer {
  /** Bytes that may leave now without waiting; negative: the bytes already promised beyond the budget. */
  private available: number;
  private updatedAt: number;

  /**
   * @param minBytes Answers below this size pass unpaced (default PACED_MIN_BYTES).
   */
  constructor(
    readonly bytesPerSecond: number,
    private readonly now: Clock = () => performance.now(),
    private readonly minBytes = PACED_MIN_BYTES,
  ) {
    this.available = bytesPerSecond;
    this.updatedAt = now();
  }

  /**
   * Takes `bytes` from the budget and says how many milliseconds the answer must wait before it leaves; throws
   * RATE_LIMITED (nothing taken) when that would be longer than PACED_MAX_WAIT_MS.
   */
  reserve(bytes: number): number {
    if (bytes < this.minBytes) return 0;
    const now = this.now();
    this.available = Math.min(this.bytesPerSecond, this.available + ((now - this.updatedAt) * this.bytesPerSecond) / SECOND_MS);
    this.updatedAt = now;
    const waitMs = (Math.max(0, bytes - this.available) * SECOND_MS) / this.bytesPerSecond;
    if (waitMs > PACED_MAX_WAIT_MS) {
      throw rateLimitRefusal(`Whole-tree answers are at the relayer's budget of ${this.bytesPerSecond} bytes a second; fetch only the leaves after those you hold`, waitMs - PACED_MAX_WAIT_MS);
    }
    this.available -= bytes;
    return waitMs;
  }
}

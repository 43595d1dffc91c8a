import type { Clock } from "./rate-limit.js";
import { rateLimitRefusal } from "./rate-limit.js";

/** Answers of the trees route below this many bytes (a warm agent's few new leaves) are never paced. */
export const PACED_MIN_BYTES = 256 * 1024;
/** The longest a bulk answer is held back; one that would wait longer is refused with Retry-After instead. */
export const PACED_MAX_WAIT_MS = 10_000;

const SECOND_MS = 1_000;

/** A bulk answer the budget admitted: the bytes charged for it so far, and when (on the pacer's clock) it may leave. */
export interface PacedAnswer {
  charged: number;
  leavesAt: number;
}

/**
 * A bandwidth budget for the trees route's bulk answers (whole trees: 12 MiB at 100,000 leaves). Each costs the
 * relayer's cores and link in proportion to its size, so a few clients fetching whole trees in a loop would take the
 * cores the settlements need. Bulk answers leave at no more than `bytesPerSecond` together, in bursts of up to one
 * second's worth: one that finds the budget spent waits its turn (the client sees a slower download), and one that
 * would wait longer than PACED_MAX_WAIT_MS is refused 429 RATE_LIMITED with Retry-After. A warm agent's answer
 * (under PACED_MIN_BYTES) never waits. An answer is charged before anything is done for it (admit, with its size in
 * the relayer's copy as it stands), and what the copy's refresh added to it once it is cut (settle).
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
   * Takes an answer of `bytes` from the budget before any work is done for it; throws RATE_LIMITED (nothing taken)
   * when it would wait longer than PACED_MAX_WAIT_MS to leave.
   */
  admit(bytes: number): PacedAnswer {
    const now = this.refill();
    if (bytes < this.minBytes) return { charged: 0, leavesAt: now };
    const waitMs = this.waitFor(bytes);
    if (waitMs > PACED_MAX_WAIT_MS) {
      throw rateLimitRefusal(`Whole-tree answers are at the relayer's budget of ${this.bytesPerSecond} bytes a second; fetch only the leaves after those you hold`, waitMs - PACED_MAX_WAIT_MS);
    }
    this.available -= bytes;
    return { charged: bytes, leavesAt: now + waitMs };
  }

  /**
   * The admitted `answer` is `bytes` long: what it grew by since admit is taken from the budget too (an admitted
   * answer is never refused). Says how many milliseconds it must wait before it leaves; none under PACED_MIN_BYTES.
   */
  settle(answer: PacedAnswer, bytes: number): number {
    const now = this.refill();
    if (bytes < this.minBytes) return 0;
    const grown = bytes - answer.charged;
    let leavesAt = answer.leavesAt;
    if (grown > 0) {
      leavesAt = Math.max(leavesAt, now + this.waitFor(grown));
      this.available -= grown;
    }
    return Math.max(0, leavesAt - now);
  }

  /** How long `bytes` more must wait for the budget, behind those promised before. */
  private waitFor(bytes: number): number {
    return (Math.max(0, bytes - this.available) * SECOND_MS) / this.bytesPerSecond;
  }

  /** Adds what the budget regained since it was last read, up to one second's worth; the time now. */
  private refill(): number {
    const now = this.now();
    this.available = Math.min(this.bytesPerSecond, this.available + ((now - this.updatedAt) * this.bytesPerSecond) / SECOND_MS);
    this.updatedAt = now;
    return now;
  }
}

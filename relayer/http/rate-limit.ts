import type { Middleware } from "koa";
import { nullifierHashOf } from "../../sdk/index.js";
import { FieldElementSchema } from "../../sdk/schema/primitives.js";
import { RelayerError } from "../errors.js";

/** How many requests the relayer admits (relayer/config.ts, docs/relayer.md "Limits"). */
export interface RateLimits {
  /** Requests per second across all callers; bursts up to one second's worth. */
  globalPerSecond: number;
  /** Requests per minute naming one note; bursts up to one minute's worth. */
  perNotePerMinute: number;
}

/** Milliseconds on a monotonic clock; tests pass one they advance by hand. */
export type Clock = () => number;

const SECOND_MS = 1_000;
const MINUTE_MS = 60_000;

/** Holds up to `capacity` tokens, refilled continuously so that an empty bucket is full again after `refillMs`. */
class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    private readonly capacity: number,
    private readonly refillMs: number,
    now: number,
  ) {
    this.tokens = capacity;
    this.updatedAt = now;
  }

  /** Takes a token: 0 when there was one, else the milliseconds until there is. */
  take(now: number): number {
    this.refill(now);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return ((1 - this.tokens) * this.refillMs) / this.capacity;
  }

  /** A full bucket is indistinguishable from a new one, so it can be forgotten. */
  isFull(now: number): boolean {
    this.refill(now);
    return this.tokens >= this.capacity;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.updatedAt) * this.capacity) / this.refillMs);
    this.updatedAt = now;
  }
}

/**
 * Rate limits without client identities (the service strips IPs): one bucket shared by every caller, and one per
 * note, keyed by the note's nullifier hash so the nullifier itself is never kept. A refused request answers 429
 * RATE_LIMITED with Retry-After, before anything is done.
 */
export class RateLimiter {
  private readonly global: TokenBucket;
  private readonly notes = new Map<string, TokenBucket>();
  private sweptAt: number;

  constructor(
    private readonly limits: RateLimits,
    private readonly now: Clock = () => performance.now(),
  ) {
    this.global = new TokenBucket(limits.globalPerSecond, SECOND_MS, now());
    this.sweptAt = now();
  }

  /** How many notes have a bucket now: bounded, see `forgetIdleNotes`. */
  get trackedNotes(): number {
    return this.notes.size;
  }

  /** The bucket shared by all callers; mounted before the body is read, so floods of junk bodies count too. */
  globalLimit(): Middleware {
    return async (_ctx, next) => {
      const waitMs = this.global.take(this.now());
      if (waitMs > 0) {
        throw rateLimitRefusal(`The relayer is at its limit of ${this.limits.globalPerSecond} requests per second`, waitMs);
      }
      return next();
    };
  }

  /** The bucket of the note a request names; mounted after the JSON body is parsed. */
  perNoteLimit(): Middleware {
    return async (ctx, next) => {
      const nullifierHash = nullifierHashIn((ctx.request as { body?: unknown }).body);
      if (nullifierHash !== undefined) {
        const now = this.now();
        this.forgetIdleNotes(now);
        const key = nullifierHash.toString();
        let bucket = this.notes.get(key);
        if (bucket === undefined) {
          bucket = new TokenBucket(this.limits.perNotePerMinute, MINUTE_MS, now);
          this.notes.set(key, bucket);
        }
        const waitMs = bucket.take(now);
        if (waitMs > 0) {
          throw rateLimitRefusal(`This note has reached its limit of ${this.limits.perNotePerMinute} requests per minute`, waitMs);
        }
      }
      return next();
    };
  }

  /**
   * Once a minute, drops the buckets that have refilled. A bucket is only created for a request the global
   * bucket admitted, so at most about two minutes' worth of global requests have one at any time.
   */
  private forgetIdleNotes(now: number): void {
    if (now - this.sweptAt < MINUTE_MS) return;
    this.sweptAt = now;
    for (const [key, bucket] of this.notes) {
      if (bucket.isFull(now)) this.notes.delete(key);
    }
  }
}

/** 429 RATE_LIMITED: `what` was refused, and a retry after `waitMs` can succeed. */
export function rateLimitRefusal(what: string, waitMs: number): RelayerError {
  const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / SECOND_MS));
  return new RelayerError("RATE_LIMITED", `${what}. Nothing was done; retry in ${retryAfterSeconds} s.`, {}, 429, retryAfterSeconds);
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The nullifier hash a body names: Poseidon of its note's nullifier (`serviceDeposit.nullifier`, or a top-level
 * `nullifier`), a `nullifierHash` (authorize, the quotes) or its quote's (the proof-carrying settles). Undefined when
 * it names none validly; the schema refuses it next.
 */
export function nullifierHashIn(body: unknown): bigint | undefined {
  if (!isRecord(body)) return undefined;
  const nullifier = FieldElementSchema.safeParse(isRecord(body.serviceDeposit) ? body.serviceDeposit.nullifier : body.nullifier);
  if (nullifier.success) return nullifierHashOf(nullifier.data);
  const nullifierHash = FieldElementSchema.safeParse(isRecord(body.quote) ? body.quote.nullifierHash : body.nullifierHash);
  return nullifierHash.success ? nullifierHash.data : undefined;
}

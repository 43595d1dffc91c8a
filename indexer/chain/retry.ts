import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";

export interface RetryPolicy {
  /** Attempts after the first; 0 never retries. */
  retries: number;
  /** Delay before the first retry, doubled for each next one up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Delay before attempt `attempt + 1`, counting retries from 0: exponential, capped. */
export function backoffDelay(policy: Pick<RetryPolicy, "baseDelayMs" | "maxDelayMs">, attempt: number): number {
  return Math.min(policy.baseDelayMs * 2 ** attempt, policy.maxDelayMs);
}

/** Runs `call` until it resolves, retrying with exponential backoff; rethrows the last error. */
export async function withRetry<T>(what: string, call: () => Promise<T>, policy: RetryPolicy, logger: Logger): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= policy.retries) throw error;
      const delayMs = backoffDelay(policy, attempt);
      logger.warn({ err: error, what, attempt: attempt + 1, delayMs }, "RPC call failed, retrying");
      await sleep(delayMs);
    }
  }
}

import type { Server } from "node:http";
import type { Middleware } from "koa";
import { RelayerError } from "../errors.js";

/** The requests being handled, so that a shutdown can refuse new ones and wait for the rest. */
export class InFlightRequests {
  private active = 0;
  private draining = false;
  private readonly onIdle = new Set<() => void>();

  get count(): number {
    return this.active;
  }

  /** A shutdown began: new requests are refused. */
  get isDraining(): boolean {
    return this.draining;
  }

  /**
   * Counts each request until its response is written out (or its connection is gone), not merely until the
   * handlers return; once draining, answers 503 SHUTTING_DOWN instead.
   */
  middleware(): Middleware {
    return async (ctx, next) => {
      if (this.draining) {
        throw new RelayerError("SHUTTING_DOWN", "The relayer is shutting down and takes no new requests. Nothing was done; retry shortly.");
      }
      this.active++;
      ctx.res.once("close", () => {
        this.active--;
        if (this.active === 0) for (const wake of this.onIdle) wake();
      });
      await next();
    };
  }

  /**
   * Refuses new requests from now on and resolves once none is in flight, or after `graceMs` at the latest,
   * with the number still running then: those are abandoned.
   */
  async drain(graceMs: number): Promise<number> {
    this.draining = true;
    if (this.active > 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.onIdle.delete(done);
          resolve();
        };
        const timer = setTimeout(done, graceMs);
        this.onIdle.add(done);
      });
    }
    return this.active;
  }
}

/**
 * Shuts `server` down gracefully: stops accepting connections, answers requests that still arrive on open ones
 * with 503, waits up to `graceMs` for the requests in flight, then drops every connection. Resolves with the
 * number of requests abandoned.
 */
export async function closeGracefully(server: Server, inFlight: InFlightRequests, graceMs: number): Promise<number> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const abandoned = await inFlight.drain(graceMs);
  server.closeAllConnections();
  await closed;
  return abandoned;
}

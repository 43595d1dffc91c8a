/**
 * Test-only fault injection at the steps of a leased withdrawal (issue 8): the relayer can be told to die at a
 * step, as a power cut would, so that tests can restart it and check that the chain and the answers agree. Off
 * unless RELAYER_CRASH_AT is set, which the config refuses outside NODE_ENV=test.
 */
export const FAULT_POINTS = [
  /** The payment header is built; nothing is reserved. */
  "before-reserve",
  /** The lease is reserved; nothing is sent. */
  "after-reserve",
  /** The relay transaction is sent and its hash recorded; it may not be mined. */
  "after-send",
  /** The relay transaction is mined; the lease is not finalized. */
  "after-mined",
] as const;

export type FaultPoint = (typeof FAULT_POINTS)[number];

export interface Faults {
  at(point: FaultPoint): void;
}

export const NO_FAULTS: Faults = { at() {} };

/** Kills this process at any of `points`: no handler, no finally block, no cleanup runs. */
export function crashAt(points: readonly FaultPoint[]): Faults {
  return {
    at(point) {
      if (points.includes(point)) process.kill(process.pid, "SIGKILL");
    },
  };
}

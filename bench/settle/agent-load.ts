import type { Custody } from "../../sdk/agent/index.js";
import type { ExactRequirement, ResourceInfo } from "../../sdk/x402/index.js";
import { seededRandom } from "../../test/relayer/helpers/fuzz-cases.js";

/**
 * How payments arrive. `open-loop`: at `perMinute` on average, each at a random time (a Poisson process: exponential
 * gaps from a PRNG seeded with `seed`, so both custodies get the same arrivals), each from an agent drawn at random,
 * whether or not earlier payments have settled. `burst`: one agent fires `size` payments at once, `bursts` times,
 * each burst once the last one settled and `gapMs` later.
 */
export type AgentLoad =
  | { kind: "open-loop"; perMinute: number; payments: number; seed: number }
  | { kind: "burst"; size: number; bursts: number; gapMs: number };

/** What bench/settle/agents.ts is told to do: who pays whom, how, and when. */
export interface AgentLoadPlan {
  relayerUrl: string;
  network: { chainId: number; asset: string };
  accepted: ExactRequirement;
  resource?: ResourceInfo;
  custody: Exclude<Custody, "auto">;
  /** Each agent's note vault (closed), opened by the agents' process: one agent each. */
  vaults: string[];
  passphrase: string;
  /** A warm agent's trees, each agent's start (a copy each): no agent downloads whole trees during the load. */
  treesPath: string;
  load: AgentLoad;
}

/** One payment as its agent lived it, in milliseconds. */
export interface PaymentRecord {
  agent: number;
  /** When it arrived, after the load began. */
  arrivalMs: number;
  /** From its arrival to the settlement's answer: what the agent waited. */
  totalMs: number;
  /** Waiting for a note while every note of its agent that could pay was held by the agent's other payments. */
  noteWaitMs: number;
  /** The quote and trees requests (non-custodial). */
  quoteAndTreesMs?: number;
  /** The agent's proof (non-custodial): witness and proof, its prover's queue included. */
  proofMs?: number;
  /** The settle request until its answer, retries included: the relayer's side (for a custodial payment, its proof too). */
  relayMs?: number;
  fundingTxHash?: string;
  /** The nullifier hash of the note it spent (of its last try). */
  nullifierHash?: string;
  error?: string;
}

/** The arrival times of an open-loop load, ms after its start, and which agent each comes from. */
export function openLoopArrivals(load: Extract<AgentLoad, { kind: "open-loop" }>, agents: number): { atMs: number; agent: number }[] {
  const random = seededRandom(load.seed);
  const meanGapMs = 60_000 / load.perMinute;
  const arrivals: { atMs: number; agent: number }[] = [];
  let atMs = 0;
  for (let i = 0; i < load.payments; i++) {
    atMs += -Math.log(1 - random()) * meanGapMs;
    arrivals.push({ atMs, agent: Math.floor(random() * agents) });
  }
  return arrivals;
}

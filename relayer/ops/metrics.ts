import { formatEther } from "ethers";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { WithdrawCircuitInput, WithdrawProof } from "../../sdk/index.js";
import type { TimedProof } from "../../sdk/prover/index.js";
import type { Prover } from "../settlement/prover.js";
import type { LeaseState, SweepRecord } from "../store/relayer-store.js";

/** Seconds buckets of a request: from a cached answer to a settle whose relay waited several blocks. */
const REQUEST_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64];
/** Seconds buckets of a proof: the native prover's ~0.3 s to the wasm engine's several seconds. */
const PROOF_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32];

/**
 * The relayer's Prometheus metrics (docs/operations.md lists them with alert rules), in a registry of its own:
 * several relayers in one process (the tests) never share a series.
 */
export class RelayerMetrics {
  readonly registry = new Registry();
  readonly requests = new Histogram({
    name: "relayer_http_request_duration_seconds",
    help: "Time to answer a request, by route (the matched path), HTTP status and error code (none when it succeeded)",
    labelNames: ["route", "status", "code"] as const,
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  });
  readonly uncertainSettlements = new Counter({
    name: "relayer_settlements_uncertain_total",
    help: "Spends answered 202 SETTLEMENT_UNCERTAIN: sent, outcome unknown when the answer left",
    registers: [this.registry],
  });
  readonly refusedNotReady = new Counter({
    name: "relayer_spends_refused_not_ready_total",
    help: "Spends refused before any proof or lease because a readiness check failed, by the code answered",
    labelNames: ["code"] as const,
    registers: [this.registry],
  });
  readonly proofsInFlight = new Gauge({
    name: "relayer_proofs_in_flight",
    help: "Proofs accepted and not finished: the one being proven and those queued behind it",
    registers: [this.registry],
  });
  readonly proofsQueued = new Gauge({
    name: "relayer_proofs_queued",
    help: "Proofs waiting behind the one being proven",
    registers: [this.registry],
  });
  readonly proofSeconds = new Histogram({
    name: "relayer_proof_duration_seconds",
    help: "Time to prove one withdrawal, by the engine that proved it (native, wasm)",
    labelNames: ["engine"] as const,
    buckets: PROOF_BUCKETS,
    registers: [this.registry],
  });
  readonly leases = new Gauge({
    name: "relayer_leases",
    help: "Leases by state (reserved, withdrawing, settled, failed)",
    labelNames: ["state"] as const,
    registers: [this.registry],
  });
  readonly sweepBacklog = new Gauge({
    name: "relayer_sweep_backlog",
    help: "Expired settle-x402 payers not yet swept, as of the last sweep",
    registers: [this.registry],
  });
  readonly sweepRuns = new Counter({
    name: "relayer_sweep_runs_total",
    help: "Scheduled payer sweeps, by result (done, failed, skipped: another relayer held the sweep lock)",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });
  readonly refunds = new Counter({
    name: "relayer_sweep_payers_total",
    help: "Expired payers swept, by outcome (deposited: a refund note was made; empty: nothing to refund)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly refundedAtomic = new Counter({
    name: "relayer_sweep_refunded_usdc_atomic_total",
    help: "USDC (atomic units) deposited back into the pool as refund notes",
    registers: [this.registry],
  });
  readonly treasuryAccruedFees = new Gauge({
    name: "relayer_treasury_accrued_fees_usdc_atomic",
    help: "USDC (atomic units) of takes accrued to the treasury in the pool and not yet claimed, as of the last sweep round",
    registers: [this.registry],
  });
  readonly relayerBalance = new Gauge({
    name: "relayer_relaying_key_balance_eth",
    help: "ETH of the relaying key (which pays every relay's gas and the sweep's refunds), as of the last check",
    registers: [this.registry],
  });
  readonly relayCost = new Gauge({
    name: "relayer_relay_cost_eth",
    help: "ETH one relay's gas costs at the current state tree depth and gas price, as of the last check",
    registers: [this.registry],
  });
  readonly ready = new Gauge({
    name: "relayer_ready",
    help: "1 when the readiness check passes, by check (database, rpc, indexer, prover, balance)",
    labelNames: ["check"] as const,
    registers: [this.registry],
  });

  recordLeases(counts: Record<LeaseState, number>): void {
    for (const [state, count] of Object.entries(counts)) this.leases.set({ state }, count);
  }

  recordSweep(records: readonly SweepRecord[], backlog: number): void {
    for (const record of records) {
      this.refunds.inc({ outcome: record.outcome });
      if (record.outcome === "deposited") this.refundedAtomic.inc(Number(record.amount));
    }
    this.sweepBacklog.set(backlog);
  }

  recordBalance(balanceWei: bigint, relayCostWei: bigint): void {
    this.relayerBalance.set(Number(formatEther(balanceWei)));
    this.relayCost.set(Number(formatEther(relayCostWei)));
  }

  /** The prover with its proofs counted and timed; `engine` names the engine proving now. */
  timed(prover: Prover, engine: () => string): Prover {
    let inFlight = 0;
    const track = (change: number) => {
      inFlight += change;
      this.proofsInFlight.set(inFlight);
      this.proofsQueued.set(Math.max(0, inFlight - 1));
    };
    return {
      prove: async (input: WithdrawCircuitInput): Promise<TimedProof> => {
        track(1);
        try {
          const proof = await prover.prove(input);
          this.proofSeconds.observe({ engine: engine() }, proof.proofTimeMs / 1000);
          return proof;
        } finally {
          track(-1);
        }
      },
      verify: (proof: WithdrawProof) => prover.verify(proof),
      close: () => prover.close(),
    };
  }
}

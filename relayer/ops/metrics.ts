import { formatEther } from "ethers";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { SellerPaymentMetrics } from "../../seller/index.js";
import type { WithdrawCircuitInput, WithdrawProof } from "../../sdk/index.js";
import type { TimedProof } from "../../sdk/prover/index.js";
import { RELAYER_ERROR_STATUS, type RelayerErrorCode } from "../errors.js";
import type { Prover } from "../settlement/prover.js";
import type { LeaseState, SweepOutcome, SweepRecord } from "../store/relayer-store.js";

/** Seconds buckets of a request: from a cached answer to a settle whose relay waited several blocks. */
const REQUEST_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64];
/** Seconds buckets of a proof: the native prover's ~0.3 s to the wasm engine's several seconds. */
const PROOF_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32];

/** What a scheduled sweep round can end as (relayer/x402/sweep-schedule.ts). */
export const SWEEP_RUN_RESULTS = ["done", "failed", "skipped"] as const;
/** What a payer can end a round as: a recorded outcome, or `failed` (its refund threw; the next round retries it). */
export const SWEEP_PAYER_OUTCOMES = ["deposited", "used", "not-recorded", "failed"] as const satisfies readonly (SweepOutcome | "failed")[];

/**
 * The relayer's Prometheus metrics (docs/operations.md lists them with alert rules), in a registry of its own:
 * several relayers in one process (the tests) never share a series. Every labelled counter that an alert reads with
 * increase() exists at 0 from the start, one series per label value it can take: a series born at 1 would make its
 * first event invisible to increase() (a refusal, a refund, an INTERNAL answer).
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
  readonly errors = new Counter({
    name: "relayer_http_errors_total",
    help: "Requests answered with an error, by its code (relayer/errors.ts); every code at 0 from the start",
    labelNames: ["code"] as const,
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
    help: "Expired settle-x402 payers not yet swept, as of the last scrape or sweep round",
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
    help: "Expired payers swept, by outcome (deposited: a refund note was made; used: the seller used the authorization; not-recorded: the chain records no payment; failed: the refund failed and the next round retries it)",
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

  readonly sellerEip3009Balance = new Gauge({
    name: "relayer_seller_eip3009_key_balance_eth",
    help: "ETH of RELAYER_SELLER_EIP3009_KEY's account (which pays the gas of the seller routes' plain payments), as of the last scrape; no series when it is not set",
    labelNames: ["account"] as const,
    registers: [this.registry],
  });
  /** The seller routes' payments: relayer_seller_payments_settled_total and the rest (docs/operations.md). */
  readonly sellerPayments = new SellerPaymentMetrics(this.registry, "relayer_seller_");

  constructor() {
    for (const code of Object.keys(RELAYER_ERROR_STATUS) as RelayerErrorCode[]) this.errors.inc({ code }, 0);
    for (const result of SWEEP_RUN_RESULTS) this.sweepRuns.inc({ result }, 0);
    for (const outcome of SWEEP_PAYER_OUTCOMES) this.refunds.inc({ outcome }, 0);
  }

  recordLeases(counts: Record<LeaseState, number>): void {
    for (const [state, count] of Object.entries(counts)) this.leases.set({ state }, count);
  }

  /** A sweep round's payers: those it recorded, and `failed` of them whose refund threw. */
  recordSweep(records: readonly SweepRecord[], failed: number): void {
    for (const record of records) {
      this.refunds.inc({ outcome: record.outcome });
      if (record.outcome === "deposited") this.refundedAtomic.inc(Number(record.amount));
    }
    this.refunds.inc({ outcome: "failed" }, failed);
  }

  recordSellerEip3009Balance(account: string, balanceWei: bigint): void {
    this.sellerEip3009Balance.set({ account }, Number(formatEther(balanceWei)));
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

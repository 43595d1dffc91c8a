import { formatEther } from "ethers";
import type { Logger } from "pino";
import type { IndexerClient } from "../../indexer/client.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError, type RelayerErrorCode } from "../errors.js";
import type { Facilitator } from "../buyer/facilitator.js";
import type { RelayerMetrics } from "./metrics.js";
import { indexerFailure } from "../settlement/note-status.js";
import type { RelayerStore } from "../store/relayer-store.js";

export const READINESS_CHECKS = ["database", "rpc", "indexer", "prover", "balance"] as const;
export type ReadinessCheck = (typeof READINESS_CHECKS)[number];

/** Every code a spend can be refused with while a check fails (the store's, the chain's, the indexer's, and ours). */
export const READINESS_REFUSAL_CODES = [
  "STORE_UNAVAILABLE",
  "CHAIN_UNAVAILABLE",
  "INDEXER_UNAVAILABLE",
  "INDEXER_COLD",
  "NOT_READY",
  "RELAYER_UNFUNDED",
] as const satisfies readonly RelayerErrorCode[];

/** What GET /health/ready answers: each check, and the error a spend would be refused with when one fails. */
export interface ReadinessReport {
  ready: boolean;
  checks: Record<ReadinessCheck, { ok: boolean; detail: string }>;
  /** The first failing check's refusal (its code says which dependency: STORE_UNAVAILABLE, CHAIN_UNAVAILABLE...). */
  refusal?: RelayerError;
}

export interface ReadinessDeps {
  store: RelayerStore;
  chain: PoolChain;
  indexer: IndexerClient;
  facilitator: Pick<Facilitator, "feeFloor">;
  /** Whether the prover can take proofs now (its engine started or fell back). */
  proverReady: () => boolean;
  metrics: RelayerMetrics;
  /** Below this the relaying key's balance is logged as a warning at each check. */
  lowBalanceWei: bigint;
  logger: Logger;
}

/** A passing report is reused this long: a settle adds at most one round of checks per second. */
const PASSING_REPORT_MS = 1_000;

/**
 * The relayer's readiness: its database answers, its RPC answers, its indexer answers and is synced, its prover
 * is up, and its relaying key holds the gas of a relay. New spends are refused while it is not ready, with the
 * failing check's error, before any proof, lease or transaction: nothing is spent.
 */
export class Readiness {
  private passing?: { report: ReadinessReport; at: number };
  private running?: Promise<ReadinessReport>;

  constructor(private readonly deps: ReadinessDeps) {
    // At 0 from the start, so that increase() sees the first refusal of each code.
    for (const code of READINESS_REFUSAL_CODES) deps.metrics.refusedNotReady.inc({ code }, 0);
  }

  /** Runs every check (at most one run at a time; a passing report is reused for PASSING_REPORT_MS). */
  check(): Promise<ReadinessReport> {
    if (this.passing !== undefined && performance.now() - this.passing.at < PASSING_REPORT_MS) return Promise.resolve(this.passing.report);
    this.running ??= this.runChecks().finally(() => (this.running = undefined));
    return this.running;
  }

  /** Throws the first failing check's refusal. */
  async assertReady(): Promise<void> {
    const { refusal } = await this.check();
    if (refusal === undefined) return;
    this.deps.metrics.refusedNotReady.inc({ code: refusal.code });
    throw refusal;
  }

  private async runChecks(): Promise<ReadinessReport> {
    const { store, chain, indexer, facilitator, metrics } = this.deps;
    const [database, rpc, indexerStatus] = await Promise.allSettled([
      store.leaseCounts(),
      Promise.all([chain.call(() => chain.provider.getBalance(chain.relayer.address)), facilitator.feeFloor()]),
      indexer.status().catch((error: unknown) => {
        throw indexerFailure(error);
      }),
    ]);
    const checks = {} as ReadinessReport["checks"];
    const failures: RelayerError[] = [];
    const record = (name: ReadinessCheck, outcome: { ok: true; detail: string } | { ok: false; error: unknown }) => {
      const error = outcome.ok ? undefined : asRefusal(outcome.error);
      checks[name] = { ok: outcome.ok, detail: outcome.ok ? outcome.detail : error!.message };
      if (error !== undefined) failures.push(error);
      metrics.ready.set({ check: name }, outcome.ok ? 1 : 0);
    };

    record("database", database.status === "fulfilled" ? { ok: true, detail: "answers" } : { ok: false, error: database.reason });
    record("rpc", rpc.status === "fulfilled" ? { ok: true, detail: `answers ${chain.network}` } : { ok: false, error: rpc.reason });
    if (indexerStatus.status === "rejected") record("indexer", { ok: false, error: indexerStatus.reason });
    else if (!indexerStatus.value.synced) record("indexer", { ok: false, error: coldIndexer() });
    else record("indexer", { ok: true, detail: `synced to block ${indexerStatus.value.lastBlock}` });
    record(
      "prover",
      this.deps.proverReady()
        ? { ok: true, detail: "ready" }
        : { ok: false, error: new RelayerError("NOT_READY", "The relayer's prover is starting; nothing was spent. Retry shortly.", {}, undefined, 5) },
    );
    if (rpc.status === "fulfilled") {
      const [balance, floor] = rpc.value;
      record("balance", this.balanceCheck(balance, floor.relayGas * floor.gasPriceWei));
    } else {
      record("balance", { ok: false, error: new RelayerError("CHAIN_UNAVAILABLE", "The relaying key's balance cannot be read: the chain RPC is unavailable; nothing was spent. Retry later.", {}, undefined, 5) });
    }

    const report: ReadinessReport = { ready: failures.length === 0, checks, refusal: failures[0] };
    this.passing = report.ready ? { report, at: performance.now() } : undefined;
    return report;
  }

  private balanceCheck(balance: bigint, relayCost: bigint): { ok: true; detail: string } | { ok: false; error: unknown } {
    const { chain, metrics, lowBalanceWei, logger } = this.deps;
    metrics.recordBalance(balance, relayCost);
    const holds = `The relaying key ${chain.relayer.address} holds ${formatEther(balance)} ETH; a relay costs up to ${formatEther(relayCost)} ETH at the current gas price`;
    if (balance < relayCost) {
      logger.error({ relayer: chain.relayer.address, balanceEth: formatEther(balance), relayCostEth: formatEther(relayCost) }, "relaying key cannot pay a relay");
      return { ok: false, error: new RelayerError("RELAYER_UNFUNDED", `${holds}, so no relay can be sent; nothing was spent. Retry later: the operator funds the key.`, {}, undefined, 60) };
    }
    if (balance < lowBalanceWei) {
      logger.warn({ relayer: chain.relayer.address, balanceEth: formatEther(balance), thresholdEth: formatEther(lowBalanceWei) }, "relaying key balance is low");
    }
    return { ok: true, detail: `${formatEther(balance)} ETH, ${balance / (relayCost === 0n ? 1n : relayCost)} relays' gas` };
  }
}

/** Errors of the checks as the refusal a spend gets: the typed ones as they are, anything else as unavailable. */
function asRefusal(error: unknown): RelayerError {
  if (error instanceof RelayerError) return error;
  return new RelayerError("NOT_READY", "A readiness check of the relayer failed; nothing was spent. Retry shortly.", {}, undefined, 5);
}

function coldIndexer(): RelayerError {
  return new RelayerError("INDEXER_COLD", "The indexer is cold: its state tree is not synced yet, so no withdrawal can be proven. Retry once it synced; nothing was spent.", {}, undefined, 5);
}

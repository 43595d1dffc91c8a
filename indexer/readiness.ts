import type { JsonRpcProvider } from "ethers";
import type { PostmanFunds } from "./asp/postman-funds.js";
import type { AspCurator } from "./asp/curator.js";
import type { IndexerMetrics } from "./metrics.js";
import type { IndexerStore } from "./store/indexer-store.js";
import type { IndexerSync } from "./sync.js";

export const INDEXER_READINESS_CHECKS = ["database", "rpc", "synced", "postman"] as const;
export type IndexerReadinessCheck = (typeof INDEXER_READINESS_CHECKS)[number];

export interface IndexerReadinessReport {
  ready: boolean;
  checks: Record<IndexerReadinessCheck, { ok: boolean; detail: string }>;
}

export interface IndexerReadinessDeps {
  store: IndexerStore;
  provider: JsonRpcProvider;
  sync: IndexerSync;
  curator: AspCurator;
  /** Absent when this indexer publishes no roots. */
  postman: PostmanFunds | null;
  metrics: IndexerMetrics;
}

/**
 * The indexer's readiness: its database answers, its RPC answers, it has caught up with the confirmed head since
 * start, and its postman can pay a root publication. Each run also sets the gauges read at scrape time (lag, ASP
 * root age, anonymity set, postman balance).
 */
export class IndexerReadiness {
  constructor(private readonly deps: IndexerReadinessDeps) {}

  async check(): Promise<IndexerReadinessReport> {
    const { store, provider, sync, curator, postman, metrics } = this.deps;
    const [latestRoot, head, funds] = await Promise.allSettled([store.latestAspRoot(), provider.getBlock("latest"), postman?.check()]);
    const checks = {} as IndexerReadinessReport["checks"];
    const record = (name: IndexerReadinessCheck, ok: boolean, detail: string) => {
      checks[name] = { ok, detail };
      metrics.ready.set({ check: name }, ok ? 1 : 0);
    };

    record("database", latestRoot.status === "fulfilled", latestRoot.status === "fulfilled" ? "answers" : `unavailable: ${reason(latestRoot.reason)}`);
    const block = head.status === "fulfilled" ? head.value : null;
    record("rpc", block !== null, block !== null ? `head ${block.number}` : `unavailable: ${head.status === "rejected" ? reason(head.reason) : "no head block"}`);
    const lastBlock = sync.lastBlock;
    const lag = block === null || lastBlock === null ? null : block.number - lastBlock;
    record("synced", sync.synced, sync.synced ? `block ${lastBlock}${lag === null ? "" : `, ${lag} behind the head`}` : "cold: the first catch-up has not finished");
    if (funds.status === "rejected") record("postman", false, `balance unreadable: ${reason(funds.reason)}`);
    else record("postman", funds.value?.ok ?? true, funds.value?.detail ?? "publishes no roots (ASP_PUBLISH_ROOTS=false)");

    if (lag !== null) metrics.lagBlocks.set(lag);
    if (lastBlock !== null) metrics.lastBlock.set(lastBlock);
    if (block !== null && latestRoot.status === "fulfilled" && latestRoot.value !== null) metrics.aspRootAge.set(block.timestamp - latestRoot.value.timestamp);
    const status = curator.status();
    metrics.aspRootCurrent.set(status.aspRootMatches ? 1 : 0);
    metrics.anonymitySet.set(status.anonymitySet);
    metrics.leafCount.set(sync.stateTree.size);
    return { ready: Object.values(checks).every((check) => check.ok), checks };
  }
}

function reason(error: unknown): string {
  return error instanceof Error ? ((error as { shortMessage?: string }).shortMessage ?? error.message) : String(error);
}

import { Gauge, Histogram, Registry } from "prom-client";

/**
 * The indexer's Prometheus metrics (docs/operations.md lists them with alert rules), in a registry of its own:
 * several indexers in one process (the tests) never share a series.
 */
export class IndexerMetrics {
  readonly registry = new Registry();
  readonly requests = new Histogram({
    name: "indexer_http_request_duration_seconds",
    help: "Time to answer a request, by route (the matched path), HTTP status and error code (none when it succeeded)",
    labelNames: ["route", "status", "code"] as const,
    buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 1, 4],
    registers: [this.registry],
  });
  readonly lagBlocks = new Gauge({
    name: "indexer_lag_blocks",
    help: "Blocks between the chain head and the last block indexed (confirmations included)",
    registers: [this.registry],
  });
  readonly lastBlock = new Gauge({ name: "indexer_last_block", help: "The last block indexed", registers: [this.registry] });
  readonly aspRootAge = new Gauge({
    name: "indexer_asp_root_age_seconds",
    help: "Chain seconds since the entrypoint's latest ASP root was published",
    registers: [this.registry],
  });
  readonly aspRootCurrent = new Gauge({
    name: "indexer_asp_root_current",
    help: "1 when the on-chain ASP root is the curator's current tree (every approved label can be proven)",
    registers: [this.registry],
  });
  readonly anonymitySet = new Gauge({
    name: "indexer_anonymity_set",
    help: "Distinct independent depositors among approved deposits (the privacy minimum is 30)",
    registers: [this.registry],
  });
  readonly leafCount = new Gauge({ name: "indexer_state_tree_leaves", help: "Leaves of the state tree", registers: [this.registry] });
  readonly postmanBalance = new Gauge({
    name: "indexer_postman_balance_eth",
    help: "ETH of the postman key that publishes ASP roots, as of the last check",
    registers: [this.registry],
  });
  readonly ready = new Gauge({
    name: "indexer_ready",
    help: "1 when the readiness check passes, by check (database, rpc, synced, postman)",
    labelNames: ["check"] as const,
    registers: [this.registry],
  });
}

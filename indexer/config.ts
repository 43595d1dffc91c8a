import { parseEther } from "ethers";
import { z } from "zod";
import { loadEnvConfig } from "../lib/env-config.js";
import { DatabaseUrlSchema } from "../lib/postgres.js";
import { AddressSchema, AtomicAmountSchema } from "../sdk/schema/primitives.js";

/** The environment variable behind each config key: what an operator sets, and what errors name. */
export const INDEXER_ENV = {
  rpcUrl: "INDEXER_RPC_URL",
  token: "INDEXER_TOKEN",
  addressBook: "INDEXER_ADDRESS_BOOK",
  dbPath: "INDEXER_DB_PATH",
  databaseUrl: "INDEXER_DATABASE_URL",
  host: "INDEXER_HOST",
  port: "INDEXER_PORT",
  confirmations: "INDEXER_CONFIRMATIONS",
  maxBlockRange: "INDEXER_MAX_BLOCK_RANGE",
  pollIntervalMs: "INDEXER_POLL_INTERVAL_MS",
  rpcRetries: "INDEXER_RPC_RETRIES",
  sanctionsList: "ASP_SANCTIONS_LIST",
  overlayList: "ASP_OVERLAY_LIST",
  publishRoots: "ASP_PUBLISH_ROOTS",
  postmanPrivateKey: "ASP_POSTMAN_PRIVATE_KEY",
  operatorAddresses: "ASP_OPERATOR_ADDRESSES",
  minimumDeposit: "ANONYMITY_MIN_DEPOSIT",
  postmanLowBalanceEth: "ASP_POSTMAN_LOW_BALANCE_ETH",
  metricsPort: "INDEXER_METRICS_PORT",
  metricsHost: "INDEXER_METRICS_HOST",
  logLevel: "LOG_LEVEL",
} as const;

const count = (min: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, "must be a non-negative integer")
    .transform(Number)
    .pipe(z.number().int().min(min));

const commaSeparatedAddresses = z
  .string()
  .transform((s) => s.split(",").map((part) => part.trim()).filter((part) => part !== ""))
  .pipe(z.array(AddressSchema));

export const IndexerConfigSchema = z
  .object({
    rpcUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) JSON-RPC URL" }),
    token: z.string().min(16, "must be at least 16 characters"),
    /** deployments/<chainId>.json of the RPC's chain when absent. */
    addressBook: z.string().min(1).optional(),
    /** SQLite file of the store, used when no databaseUrl is set. */
    dbPath: z.string().min(1).default("data/indexer.sqlite"),
    /** PostgreSQL instead of the SQLite file. */
    databaseUrl: DatabaseUrlSchema.optional(),
    host: z.string().min(1).default("127.0.0.1"),
    /** 0 binds any free port (the log line "indexer API listening" names it). */
    port: count(0).pipe(z.number().max(65_535)).default(8788),
    /** Blocks to stay behind the head; default 0 on the local dev chain (31337), 2 elsewhere. */
    confirmations: count(0).optional(),
    maxBlockRange: count(1).default(2_000),
    pollIntervalMs: count(100).default(2_000),
    rpcRetries: count(0).default(5),
    sanctionsList: z.string().min(1).default("config/screening/sanctions.txt"),
    overlayList: z.string().min(1).default("config/screening/overlay.txt"),
    publishRoots: z.stringbool().default(true),
    postmanPrivateKey: z
      .string()
      .regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte private key")
      .optional(),
    operatorAddresses: commaSeparatedAddresses.default([]),
    minimumDeposit: AtomicAmountSchema.default(1_000_000n),
    /** Below this ETH balance of the postman each readiness check logs a warning (the metric shows it too). */
    postmanLowBalanceEth: z
      .string()
      .regex(/^(0|[1-9][0-9]{0,8})(\.[0-9]{1,18})?$/, "must be a decimal amount of ETH, such as 0.05")
      .transform((amount) => parseEther(amount))
      .default(parseEther("0.01")),
    /** Serves GET /metrics on a port of its own; absent: on the API port, behind INDEXER_TOKEN. */
    metricsPort: count(0).pipe(z.number().max(65_535)).optional(),
    metricsHost: z.string().min(1).default("127.0.0.1"),
    logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  })
  .strict()
  .superRefine(
    (config, ctx) => {
      if (config.publishRoots && config.postmanPrivateKey === undefined) {
        ctx.addIssue({ code: "custom", path: ["postmanPrivateKey"], message: "required to publish ASP roots" });
      }
    },
    // Run even when other keys are invalid, so one start reports every missing key.
    { when: () => true },
  );

export type IndexerConfig = z.infer<typeof IndexerConfigSchema>;
export type IndexerConfigInput = z.input<typeof IndexerConfigSchema>;

/** Validates the indexer's environment once, at start. */
export function loadIndexerConfig(env: NodeJS.ProcessEnv): IndexerConfig {
  return loadEnvConfig(INDEXER_ENV, IndexerConfigSchema, env);
}

/** Blocks to wait before indexing: none on the automining local chain, where nothing reorgs by itself. */
export function confirmationsFor(config: IndexerConfig, chainId: number): number {
  return config.confirmations ?? (chainId === 31337 ? 0 : 2);
}

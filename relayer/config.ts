import { parseEther } from "ethers";
import { z } from "zod";
import { loadEnvConfig } from "../lib/env-config.js";
import { DatabaseUrlSchema } from "../lib/postgres.js";
import { AddressSchema } from "../sdk/schema/primitives.js";
import { FAULT_POINTS } from "./ops/faults.js";
import { parseUsdc } from "./pricing/pricing.js";
import { DEFAULT_LEASE_TIMING } from "./settlement/leased-withdrawals.js";
import { operatorSecretWeakness, SECRET_RECIPE } from "./operator-secret.js";
import { DEFAULT_PAYMENT_WINDOW } from "./x402/seller-terms.js";

/** The environment variable behind each config key (docs/relayer.md lists them). */
export const RELAYER_ENV = {
  rpcUrl: "RELAYER_RPC_URL",
  relayerPrivateKey: "RELAYER_PRIVATE_KEY",
  indexerUrl: "INDEXER_URL",
  indexerToken: "INDEXER_TOKEN",
  addressBook: "RELAYER_ADDRESS_BOOK",
  treasury: "TREASURY_ADDRESS",
  payerKeySecret: "PAYER_KEY_SECRET",
  host: "RELAYER_HOST",
  port: "RELAYER_PORT",
  dbPath: "RELAYER_DB_PATH",
  databaseUrl: "RELAYER_DATABASE_URL",
  accessFeeEnforced: "ACCESS_FEE_ENFORCED",
  pricingMode: "PRICING_MODE",
  tier: "PRICING_TIER",
  usdcPerEth: "RELAYER_USDC_PER_ETH",
  publicUrl: "RELAYER_PUBLIC_URL",
  logLevel: "LOG_LEVEL",
  proverWorkers: "RELAYER_PROVER_WORKERS",
  proverQueue: "RELAYER_PROVER_QUEUE",
  rapidsnarkPath: "RELAYER_RAPIDSNARK_PATH",
  prover: "RELAYER_PROVER",
  rateLimitGlobalPerSecond: "RELAYER_RATE_LIMIT_GLOBAL_PER_SECOND",
  rateLimitPerNotePerMinute: "RELAYER_RATE_LIMIT_PER_NOTE_PER_MINUTE",
  treesBytesPerSecond: "RELAYER_TREES_BYTES_PER_SECOND",
  rpcTimeoutMs: "RELAYER_RPC_TIMEOUT_MS",
  relayBatch: "RELAYER_RELAY_BATCH",
  relayBatchMax: "RELAYER_RELAY_BATCH_MAX",
  shutdownGraceMs: "RELAYER_SHUTDOWN_GRACE_MS",
  leaseWaitMs: "RELAYER_LEASE_WAIT_MS",
  leaseStaleMs: "RELAYER_LEASE_STALE_MS",
  x402MinWindowSeconds: "RELAYER_X402_MIN_WINDOW_SECONDS",
  x402MaxWindowSeconds: "RELAYER_X402_MAX_WINDOW_SECONDS",
  quoteTtlSeconds: "RELAYER_QUOTE_TTL_SECONDS",
  relayInclusionTimeoutMs: "RELAYER_RELAY_INCLUSION_TIMEOUT_MS",
  lowBalanceEth: "RELAYER_LOW_BALANCE_ETH",
  metricsPort: "RELAYER_METRICS_PORT",
  metricsHost: "RELAYER_METRICS_HOST",
  metricsToken: "RELAYER_METRICS_TOKEN",
  sweepIntervalSeconds: "RELAYER_SWEEP_INTERVAL_SECONDS",
  feeClaimMinimum: "RELAYER_FEE_CLAIM_MINIMUM_ATOMIC",
  sellerFee: "RELAYER_SELLER_FEE_ATOMIC",
  sellerEip3009PrivateKey: "RELAYER_SELLER_EIP3009_KEY",
  crashAt: "RELAYER_CRASH_AT",
  nodeEnv: "NODE_ENV",
} as const;

const milliseconds = z
  .string()
  .regex(/^[0-9]+$/, "must be a whole number of milliseconds")
  .transform(Number);

const port = z
  .string()
  .regex(/^[0-9]+$/, "must be a port number")
  .transform(Number)
  .pipe(z.number().int().min(0).max(65_535));

const ethAmount = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,8})(\.[0-9]{1,18})?$/, "must be a decimal amount of ETH, such as 0.05")
  .transform((amount) => parseEther(amount));

// Capped at what setTimeout accepts: a longer delay fires at once.
const positiveInt = z
  .string()
  .regex(/^[1-9][0-9]*$/, "must be a positive integer")
  .transform(Number)
  .pipe(z.number().int().max(2 ** 31 - 1));

export const RelayerConfigSchema = z
  .object({
    rpcUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) JSON-RPC URL" }),
    /** Key of the relaying party (postman) that submits relay transactions and pays their gas. */
    relayerPrivateKey: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte private key"),
    indexerUrl: z.url({ protocol: /^https?$/, error: "must be the indexer's http(s) base URL" }),
    indexerToken: z.string().min(16, "must be at least 16 characters"),
    /** deployments/<chainId>.json of the RPC's chain when absent. */
    addressBook: z.string().min(1).optional(),
    /** Receives the per-settle take and the access fees. */
    treasury: AddressSchema,
    /**
     * 32-byte operator secret the agents' API keys and the quote MAC key are derived from (relayer/operator-secret.ts);
     * no key that holds money. The name is kept from when payer keys derived from it. Keep it like a key.
     */
    payerKeySecret: z
      .string()
      .regex(/^0x[0-9a-fA-F]{64}$/, `must be a 0x-prefixed 32-byte secret; ${SECRET_RECIPE}`)
      .superRefine((secret, ctx) => {
        const weakness = operatorSecretWeakness(secret);
        if (weakness !== undefined) ctx.addIssue({ code: "custom", message: `is weak: it ${weakness}. Whoever guesses it mints quotes and agent keys of this relayer; ${SECRET_RECIPE}` });
      }),
    host: z.string().min(1).default("127.0.0.1"),
    port: port.default(8787),
    /** SQLite file of the store, used when no databaseUrl is set. */
    dbPath: z.string().min(1).default("data/relayer.sqlite"),
    /** PostgreSQL instead of the SQLite file: what several relayer instances behind one load balancer share. */
    databaseUrl: DatabaseUrlSchema.optional(),
    /** docs/api.md 3.3: the access-fee gate; off in the pilot. */
    accessFeeEnforced: z.stringbool().default(false),
    /** Overrides the network's pricing mode (docs/api.md 8); a local chain defaults to free-for-testing. */
    pricingMode: z.enum(["free-for-testing", "paid"]).optional(),
    tier: z.enum(["standard", "compliance"]).default("standard"),
    /**
     * The ETH price in USDC that converts a relay's gas cost into the fee floor (relayer/pricing/pricing.ts). Set it near
     * the market price: a low one lets paid relays cost the operator more than their take. Unset: 3000, or 2 on
     * the local chain (defaultUsdcPerEth).
     */
    usdcPerEth: z
      .string()
      .regex(/^(0|[1-9][0-9]{0,8})(\.[0-9]{1,6})?$/, "must be a decimal USDC price of one ETH, such as 3000 or 2512.25")
      .transform(parseUsdc)
      .refine((price) => price > 0n, "must be above zero")
      .optional(),
    /** Base URL the `links` and `endpoints` of `supported` are given under. */
    publicUrl: z.url().optional(),
    logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    /** Proof worker threads, over which each proof is spread (relayer/prover, sdk/prover); one per core when absent. */
    proverWorkers: positiveInt.optional(),
    /** Proofs that may wait behind the one being proven; one more answers PROVER_BUSY (503 with Retry-After). */
    proverQueue: z.string().regex(/^[0-9]+$/, "must be a whole number").transform(Number).default(16),
    /** A rapidsnark-compatible prover binary called per proof (instead of the built native prover); every proof is verified. */
    rapidsnarkPath: z.string().min(1).optional(),
    /** native: the prover `npm ci` built (start fails without it); wasm: the in-process engine; auto: native when built. */
    prover: z.enum(["auto", "native", "wasm"]).default("auto"),
    /** Requests per second across all callers (the service keeps no IPs to limit by); bursts up to one second's worth. */
    rateLimitGlobalPerSecond: positiveInt.default(100),
    /** Requests per minute naming one note (by its nullifier hash); bursts up to one minute's worth. */
    rateLimitPerNotePerMinute: positiveInt.default(60),
    /** Bytes a second the trees route's bulk answers (whole trees) may take together (relayer/http/trees-pacing.ts). */
    treesBytesPerSecond: positiveInt.default(16 * 1024 * 1024),
    /** Each chain RPC request gives up after this long and answers CHAIN_UNAVAILABLE. */
    rpcTimeoutMs: positiveInt.default(15_000),
    /**
     * Relays that arrive while one is on its way to a block leave together in one Entrypoint.relayBatch
     * (relayer/chain/relay-queue.ts); false sends every relay alone, as soon as its proof is ready.
     */
    relayBatch: z.stringbool().default(true),
    /** The most relays one batch carries, at most the entrypoint's MAX_BATCH_SIZE (16). */
    relayBatchMax: positiveInt.pipe(z.number().max(16, "must be at most 16, Entrypoint.MAX_BATCH_SIZE")).default(16),
    /** On SIGINT/SIGTERM, how long in-flight requests may finish before the relayer closes anyway. */
    shutdownGraceMs: positiveInt.default(30_000),
    /** How long a duplicate request for a note waits for the request holding its lease (relayer/settlement). */
    leaseWaitMs: milliseconds.default(DEFAULT_LEASE_TIMING.waitForLeaseMs),
    /** When a lease with no transaction is taken as abandoned; must exceed the longest proving time with queueing. */
    leaseStaleMs: milliseconds.default(DEFAULT_LEASE_TIMING.staleLeaseMs),
    /** settle-x402 refuses a seller whose maxTimeoutSeconds is shorter: proving and funding must fit (relayer/x402/seller-terms.ts). */
    x402MinWindowSeconds: positiveInt.default(DEFAULT_PAYMENT_WINDOW.minimumSeconds),
    /** settle-x402 refuses a seller whose maxTimeoutSeconds is longer: a refund waits for the window's end. */
    x402MaxWindowSeconds: positiveInt.default(DEFAULT_PAYMENT_WINDOW.maximumSeconds),
    /**
     * How long a quote of a non-custodial settle is good for a new withdrawal (docs/api.md 4.10): the agent fetches
     * the trees and proves in that time. A retry of a settled spend is answered whatever the quote's age.
     */
    quoteTtlSeconds: positiveInt.default(60),
    /**
     * How long a settle waits for its relay to be mined before it answers 202 SETTLEMENT_UNCERTAIN with the hash;
     * a retry of the same request finishes it from the chain. Four of Base's 2 s blocks: a relay is mined in the
     * next one, and a client waiting on a settle gives up after seconds, not a minute.
     */
    relayInclusionTimeoutMs: positiveInt.default(8_000),
    /** Below this ETH balance of the relaying key the relayer logs a warning on each check (the metric shows it too). */
    lowBalanceEth: ethAmount.default(parseEther("0.01")),
    /** Serves GET /metrics (Prometheus) on a port of its own, apart from the public API; 0 picks a free one. */
    metricsPort: port.optional(),
    metricsHost: z.string().min(1).default("127.0.0.1"),
    /** Serves GET /metrics on the public port, to callers presenting `Authorization: Bearer <token>`. */
    metricsToken: z.string().min(16, "must be at least 16 characters").optional(),
    /** How often the relayer sweeps expired settle-x402 payers into refund notes (relayer/x402/sweep-schedule.ts); 0 turns it off. */
    sweepIntervalSeconds: z
      .string()
      .regex(/^[0-9]+$/, "must be a whole number of seconds (0: off)")
      .transform(Number)
      .pipe(z.number().int().max(2_000_000))
      .default(600),
    /** The accrued takes (USDC atomic) at which a sweep round claims them for the treasury (PrivacyPool.claimFees). */
    feeClaimMinimum: z
      .string()
      .regex(/^[0-9]+$/, "must be a whole number of USDC atomic units")
      .transform(BigInt)
      .default(1_000_000n),
    /**
     * The least fee (USDC atomic) a seller's shielded-proof entry names for the relayer's seller routes (docs/api.md
     * 4.9); each payment must also pay its relay's gas at the gas price of the moment.
     */
    sellerFee: z
      .string()
      .regex(/^[0-9]+$/, "must be a whole number of USDC atomic units")
      .transform(BigInt)
      .default(10_000n),
    /**
     * Key of the account that settles sellers' plain `exact` (EIP-3009) payments on the seller routes and pays their
     * gas, which no fee pays back (docs/relayer.md, "Seller routes"). Its own key: its transactions keep their own
     * nonces, apart from the relay queue's. Unset: the seller routes settle shielded-proof payments only.
     */
    sellerEip3009PrivateKey: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte private key").optional(),
    /** Test-only fault injection (relayer/ops/faults.ts): steps at which the process kills itself. */
    crashAt: z
      .string()
      .transform((list) => list.split(",").map((point) => point.trim()))
      .pipe(z.array(z.enum(FAULT_POINTS)))
      .default([]),
    nodeEnv: z.string().optional(),
  })
  .strict()
  .refine((config) => config.x402MinWindowSeconds <= config.x402MaxWindowSeconds, {
    path: ["x402MinWindowSeconds"],
    message: "must not exceed RELAYER_X402_MAX_WINDOW_SECONDS",
  })
  .refine((config) => config.sellerEip3009PrivateKey?.toLowerCase() !== config.relayerPrivateKey.toLowerCase(), {
    path: ["sellerEip3009PrivateKey"],
    message: "must not be RELAYER_PRIVATE_KEY: the EIP-3009 settles would race the relay queue for its nonces",
  })
  .refine((config) => config.crashAt.length === 0 || config.nodeEnv === "test", {
    path: ["crashAt"],
    message: "is fault injection for tests: it is refused unless NODE_ENV=test",
  });

export type RelayerConfig = z.infer<typeof RelayerConfigSchema>;

/** Validates the relayer's environment once, at start. */
export function loadRelayerConfig(env: NodeJS.ProcessEnv): RelayerConfig {
  return loadEnvConfig(RELAYER_ENV, RelayerConfigSchema, env);
}

import type Koa from "koa";
import type { Logger } from "pino";
import { privateKeyToAccount } from "viem/accounts";
import type { TreeLeavesQuery } from "../indexer/api.js";
import { IndexerClient } from "../indexer/client.js";
import { viemFacilitatorSigner } from "../lib/viem-facilitator-signer.js";
import { verificationKeySha256 } from "../sdk/index.js";
import { AccessFeeGate } from "./buyer/access-fee-gate.js";
import { AccessFeeRelay } from "./buyer/access-fee-relay.js";
import { AgentRegistry } from "./agents/registry.js";
import { connectPoolChain } from "./chain/connect-chain.js";
import { RECEIPT_POLL_MS, type PoolChain } from "./chain/pool-chain.js";
import type { RelayerConfig } from "./config.js";
import { Facilitator } from "./buyer/facilitator.js";
import { crashAt, NO_FAULTS } from "./ops/faults.js";
import { createRelayerApp } from "./http/app.js";
import { BulkAnswerPacer } from "./http/trees-pacing.js";
import { InFlightRequests } from "./http/in-flight.js";
import { checkIndexer } from "./ops/indexer-check.js";
import { describeCause } from "./ops/upstream-cause.js";
import { RateLimiter } from "./http/rate-limit.js";
import { buildOpenApi } from "./http/openapi.js";
import { accessFeeFor, defaultUsdcPerEth, networkPricing } from "./pricing/pricing.js";
import { SupportedResponseSchema } from "./schemas/supported.js";
import { ProverService } from "./prover/prover-service.js";
import type { Prover } from "./settlement/prover.js";
import { DEFAULT_LEASE_TIMING, LeasedWithdrawals } from "./settlement/leased-withdrawals.js";
import { indexerFailure } from "./settlement/note-status.js";
import { ProvenSpends } from "./settlement/proven-spends.js";
import { QuoteSigner } from "./settlement/quote.js";
import { PoolWithdrawer } from "./settlement/withdrawal.js";
import { openRelayerStore } from "./store/open-store.js";
import type { RelayerStore } from "./store/relayer-store.js";
import { buildSupported } from "./pricing/supported.js";
import { TabOpener } from "./x402/open-tab.js";
import { X402Settler } from "./x402/settle-x402.js";
import { SweepSchedule } from "./x402/sweep-schedule.js";
import { expiredPayersWaiting } from "./x402/payer-sweep.js";
import { TreesCache } from "./trees/trees-cache.js";
import { sellerFacilitator, sellerX402Facilitator } from "./seller/seller-facilitator.js";
import { RelayerMetrics } from "./ops/metrics.js";
import { Readiness } from "./ops/readiness.js";

export interface Relayer {
  app: Koa;
  metrics: RelayerMetrics;
  /** Refreshes the gauges read at scrape time (readiness, balances, leases, the sweep backlog); never rejects. */
  refreshMetrics(): Promise<void>;
  readiness: Readiness;
  /** The scheduled payer sweep; absent when RELAYER_SWEEP_INTERVAL_SECONDS is 0. */
  sweeps?: SweepSchedule;
  facilitator: Facilitator;
  chain: PoolChain;
  store: RelayerStore;
  /** The requests being handled; a shutdown drains them (relayer/main.ts). */
  inFlight: InFlightRequests;
  close(): Promise<void>;
}

/** Minimum deposit of the USDC pool (docs/design.md 4), reported in `supported`. */
const MINIMUM_DEPOSIT = 1_000_000n;

/** The prover the config asks for. */
export function proverFor(config: RelayerConfig, logger: Logger): ProverService {
  return new ProverService({ workers: config.proverWorkers, maxQueued: config.proverQueue, prover: config.prover, nativeProverPath: config.rapidsnarkPath }, logger);
}

/** Wires the relayer from validated config: the one place that knows every dependency. */
export async function createRelayer(config: RelayerConfig, logger: Logger, prover: Prover = proverFor(config, logger)): Promise<Relayer> {
  // What is opened is closed again when a later step fails: prover threads or a database pool would keep the
  // process alive after the start failed.
  let chain: PoolChain | undefined;
  let store: RelayerStore | undefined;
  try {
    const connected = await connectPoolChain(config);
    chain = connected.chain;
    const opened = await openRelayerStore(config);
    store = opened.store;
    // Requests are taken once proofs can be made: readiness refuses spends while the prover is starting.
    if (prover instanceof ProverService) await prover.whenReady();
    return await wireRelayer(config, logger, prover, connected, opened);
  } catch (error) {
    chain?.provider.destroy();
    await store?.close().catch(() => undefined);
    await prover.close();
    throw error;
  }
}

async function wireRelayer(
  config: RelayerConfig,
  logger: Logger,
  prover: Prover,
  { chain, book }: Awaited<ReturnType<typeof connectPoolChain>>,
  { store, backend: storageBackend }: Awaited<ReturnType<typeof openRelayerStore>>,
): Promise<Relayer> {
  const indexer = new IndexerClient({ baseUrl: config.indexerUrl, token: config.indexerToken });
  await checkIndexer(indexer, config.indexerUrl, book);
  const metrics = new RelayerMetrics();
  const provers = metrics.timed(prover, () => (prover instanceof ProverService ? prover.engine : "external"));
  const pricing = networkPricing(chain.network, config.pricingMode);
  const accessFee = new AccessFeeGate(
    { enforced: config.accessFeeEnforced, requiredFee: accessFeeFor(config.tier, pricing), treasury: config.treasury },
    store,
    chain,
    // The facilitator prices relays; it is made below, with the gate, and asked only once requests arrive.
    (): Promise<bigint> => facilitator.chargedRelayCost(),
  );
  await accessFee.assertTreasuryMatches();
  const agents = new AgentRegistry(store, config.payerKeySecret);
  const withdrawals = new LeasedWithdrawals({
    store,
    withdrawer: new PoolWithdrawer(indexer, provers, chain),
    chain,
    indexer,
    faults: config.crashAt.length > 0 ? crashAt(config.crashAt) : NO_FAULTS,
    timing: { ...DEFAULT_LEASE_TIMING, waitForLeaseMs: config.leaseWaitMs, staleLeaseMs: config.leaseStaleMs },
    logger,
  });
  const usdcPerEth = config.usdcPerEth ?? defaultUsdcPerEth(chain.network);
  const proofs = new ProvenSpends({ chain, indexer, prover: provers, signer: new QuoteSigner(config.payerKeySecret), ttlSeconds: config.quoteTtlSeconds });
  const facilitator = new Facilitator({
    chain,
    indexer,
    withdrawals,
    proofs,
    accessFee,
    agents,
    pricing,
    tier: config.tier,
    treasury: config.treasury,
    usdcPerEth,
  });
  const paymentWindow = { minimumSeconds: config.x402MinWindowSeconds, maximumSeconds: config.x402MaxWindowSeconds };
  const nonCustodial = { quoteTtlSeconds: config.quoteTtlSeconds, verificationKeySha256: await verificationKeySha256() };
  const payerDeps = { facilitator, chain, accessFee, agents, window: paymentWindow };
  const x402 = new X402Settler(payerDeps);
  const tabs = new TabOpener(payerDeps);

  const supported = async () =>
    buildSupported({
      network: chain.network,
      pricing,
      accessFeeEnforced: config.accessFeeEnforced,
      storageBackend,
      treasury: config.treasury,
      contracts: { entrypoint: book.entrypoint, privacyPool: book.privacyPool, usdc: book.usdc },
      minimumDeposit: MINIMUM_DEPOSIT,
      agentCount: (await store.listAgents()).length,
      ...(await indexer.status().then(
        (status) => ({ indexer: status, indexerError: null }),
        (error: unknown) => {
          logger.warn({ cause: describeCause(error) }, "indexer status unavailable");
          return { indexer: null, indexerError: describeCause(error) };
        },
      )),
      feeFloor: await facilitator.feeFloor().catch(() => null),
      baseUrl: config.publicUrl ?? `http://${config.host}:${config.port}`,
      settleX402: { takeBps: facilitator.takeBps, window: paymentWindow },
      nonCustodial,
    });
  const openapi = buildOpenApi(SupportedResponseSchema);
  const rateLimiter = new RateLimiter({ globalPerSecond: config.rateLimitGlobalPerSecond, perNotePerMinute: config.rateLimitPerNotePerMinute });
  const inFlight = new InFlightRequests();
  const treesCache = new TreesCache(indexer);
  const trees = {
    sizeNow: (query: TreeLeavesQuery) => treesCache.sizeNow(query),
    answer: (query: TreeLeavesQuery) =>
      treesCache.answer(query).catch((error: unknown) => {
        throw indexerFailure(error);
      }),
  };
  const readiness = new Readiness({
    store,
    chain,
    indexer,
    facilitator,
    proverReady: () => !(prover instanceof ProverService) || prover.ready,
    metrics,
    lowBalanceWei: config.lowBalanceEth,
    logger,
  });
  // The account of RELAYER_SELLER_EIP3009_KEY: it settles the seller routes' plain payments (docs/relayer.md, "Seller routes").
  const eip3009Account = config.sellerEip3009PrivateKey === undefined ? undefined : privateKeyToAccount(config.sellerEip3009PrivateKey as `0x${string}`);
  const refreshMetrics = async () => {
    await Promise.allSettled([
      readiness.check(),
      // Read at each scrape, not from the readiness report, which is reused for a second.
      store.leaseCounts().then((counts) => metrics.recordLeases(counts)),
      expiredPayersWaiting({ store, chain }).then((waiting) => metrics.sweepBacklog.set(waiting)),
      eip3009Account && chain.call(() => chain.provider.getBalance(eip3009Account.address)).then((wei) => metrics.recordSellerEip3009Balance(eip3009Account.address, wei)),
    ]);
  };
  const app = createRelayerApp({
    facilitator,
    x402,
    tabs,
    accessFee,
    accessFeeRelay: new AccessFeeRelay({ facilitator, accessFee, chain }),
    agents,
    supported,
    trees,
    treesPacer: new BulkAnswerPacer(config.treesBytesPerSecond),
    openapi: () => openapi,
    logger,
    rateLimiter,
    inFlight,
    readiness,
    metrics,
    refreshMetrics,
    metricsToken: config.metricsToken,
    store,
    seller: {
      facilitator: sellerX402Facilitator({
        payments: sellerFacilitator({
          chain,
          indexer,
          store,
          feeRecipient: config.treasury,
          minimumFee: config.sellerFee,
          usdcPerEth,
          metrics: metrics.sellerPayments,
        }),
        relayer: chain.relayer.address,
        eip3009Signer: eip3009Account && viemFacilitatorSigner(eip3009Account, { rpcUrl: config.rpcUrl, chainId: chain.deployment.chainId, receiptPollMs: RECEIPT_POLL_MS }),
        metrics: metrics.sellerPayments,
      }),
    },
  });
  const sweeps =
    config.sweepIntervalSeconds === 0
      ? undefined
      : new SweepSchedule({
          store,
          chain,
          metrics,
          logger,
          intervalMs: config.sweepIntervalSeconds * 1000,
          treasury: config.treasury,
          feeClaimMinimum: config.feeClaimMinimum,
        });
  sweeps?.start();

  return {
    app,
    metrics,
    refreshMetrics,
    readiness,
    sweeps,
    facilitator,
    chain,
    store,
    inFlight,
    async close() {
      await sweeps?.stop();
      chain.provider.destroy();
      await store.close();
      await prover.close();
    },
  };
}


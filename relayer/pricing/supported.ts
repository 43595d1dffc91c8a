import type { IndexerStatus } from "../../indexer/api.js";
import { ENTERPRISE_TIER, formatUsdc, KNOWN_NETWORKS, networkPricing, TIERS, type FeeFloor, type NetworkPricing } from "./pricing.js";
import { ROUTES } from "../http/paths.js";
import { isPrivate, MINIMUM_FOR_PRIVACY, RELAYER_LEARNS } from "./privacy.js";
import { FACILITATOR_MARGIN_SECONDS, type PaymentWindow } from "../x402/seller-terms.js";

/** Facts about this deployment that `supported` reports; everything else in it is computed live. */
export interface SupportedContext {
  network: string;
  pricing: NetworkPricing;
  accessFeeEnforced: boolean;
  storageBackend: "sqlite" | "postgres";
  treasury: string;
  contracts: { entrypoint: string; privacyPool: string; usdc: string };
  minimumDeposit: bigint;
  agentCount: number;
  /** The indexer's status, or null when it cannot be reached. */
  indexer: IndexerStatus | null;
  /** Why the indexer's status could not be read (no secrets), null when it was. */
  indexerError: string | null;
  /** The fee floor now, or null when the chain cannot be read. */
  feeFloor: FeeFloor | null;
  baseUrl: string;
  /** What settle-x402 adds to a seller's price, and the seller windows it pays. */
  settleX402: { takeBps: bigint; window: PaymentWindow };
  /** Non-custodial settles: how long a quote lasts, and the SHA-256 of the verification key proofs are checked against. */
  nonCustodial: { quoteTtlSeconds: number; verificationKeySha256: string };
}


/** The operator documentation, a path in this facilitator's repository. */
const REPO_DOCS = "docs/relayer.md";

/** A blocking reason: its code, its message and what it blocks (default: customer use). */
type Blocker = readonly [code: string, message: string, blocks?: readonly string[]];

/** Reasons of the live indexer health: without the indexer no note can be verified or settled, pilot or not. */
const LIVE_BLOCKS = ["pilot", "customer"] as const;

/** Transitions out of pilot that are not made in code; listed while they hold (docs/api.md 4.1). */
const STANDING_BLOCKERS = [
  ["MAINNET_E2E_NOT_VERIFIED", "The full x402 flow has not been verified end to end on Base mainnet."],
  ["LEGAL_CLEARANCE_NOT_APPROVED", "Legal clearance for customer use has not been approved."],
  ["CUSTOMER_PULL_NOT_CONFIRMED", "Customer demand has not been confirmed."],
  ["ANONYMITY_SET_PROVENANCE_NOT_VERIFIED", "The independence of the depositors in the anonymity set has not been verified by a third party."],
] as const;

const tierPrices = (values: (typeof TIERS)["standard"]) => {
  const both = (byClass: { test: bigint; mainnet: bigint }) => ({
    sepoliaAtomic: byClass.test.toString(),
    sepoliaUsdc: formatUsdc(byClass.test),
    mainnetAtomic: byClass.mainnet.toString(),
    mainnetUsdc: formatUsdc(byClass.mainnet),
  });
  return {
    takeBps: Number(values.takeBps),
    takePercent: `${Number(values.takeBps) / 100}%`,
    accessFee: both(values.accessFee),
    minimumSettle: both(values.minimumSettle),
    target: values.target,
  };
};

const feeFloorToWire = (floor: FeeFloor) => ({
  enforced: floor.enforced,
  stateTreeDepth: Number(floor.depth),
  relayGas: floor.relayGas.toString(),
  gasPriceWei: floor.gasPriceWei.toString(),
  usdcPerEth: formatUsdc(floor.usdcPerEth),
  floorAtomic: floor.floor.toString(),
  floorUsdc: formatUsdc(floor.floor),
  smallestWithdrawalAtomic: floor.smallestGross.toString(),
  note: floor.enforced
    ? "Each spend's take must reach the floor: the most gas of a relay at the current state tree depth x the gas price, in USDC. Withdraw at least smallestWithdrawalAtomic."
    : "No take is charged on this network: the operator pays relays; the minimum settle still applies (smallestWithdrawalAtomic).",
});

/** GET /api/facilitator/supported: the capability surface of docs/api.md 4.1, computed from live state. */
export function buildSupported(ctx: SupportedContext) {
  const anonymitySet = ctx.indexer?.anonymitySet ?? null;
  const privateNow = isPrivate(anonymitySet);
  const indexerDown: Blocker[] =
    ctx.indexer === null
      ? [["INDEXER_UNAVAILABLE", `The indexer cannot be reached (${ctx.indexerError}): no note can be verified or settled.`, LIVE_BLOCKS]]
      : ctx.indexer.synced
        ? []
        : [["INDEXER_COLD", "The indexer has not caught up with the chain yet: no note can be verified or settled.", LIVE_BLOCKS]];
  const blockingReasons = [
    ...indexerDown,
    ...(privateNow
      ? []
      : [["ANONYMITY_SET_BELOW_MINIMUM", `The anonymity set is ${anonymitySet ?? "unknown"}; privacy is claimed from ${MINIMUM_FOR_PRIVACY} independent depositors.`] as const]),
    ...(ctx.accessFeeEnforced ? [] : [["PRICING_NOT_ENFORCED", "The access-fee gate is off during the pilot."] as const]),
    ...STANDING_BLOCKERS,
  ].map(([code, message, blocks]: Blocker) => ({ code, message, blocks: [...(blocks ?? ["customer"])] }));
  const url = (path: string) => new URL(path, ctx.baseUrl).toString();

  return {
    x402Version: 2,
    facilitator: "x402 privacy facilitator",
    version: "1.0.0",
    status: "pilot",
    description:
      "Pays x402 sellers out of a privacy pool with Groth16 withdrawal proofs, so the agent's wallet never appears as the payer. Compliance through a screened association set (ASP).",
    customerReady: blockingReasons.length === 0,
    pilotReady: !blockingReasons.some((reason) => reason.blocks.includes("pilot")),
    verificationReady: true,
    blockingReasons,
    supported: [{ scheme: "exact", network: ctx.network, asset: ctx.contracts.usdc, symbol: "USDC", decimals: 6 }],
    pilot: {
      enabled: true,
      private: privateNow,
      anonymitySet,
      minimumForPrivacy: MINIMUM_FOR_PRIVACY,
      howToJoin: `Deposit at least ${formatUsdc(ctx.minimumDeposit)} USDC into the pool through the entrypoint ${ctx.contracts.entrypoint} (see the SDK), then settle with the note.`,
    },
    privacy: {
      enabled: true,
      verificationReady: true,
      organicAnonymitySet: anonymitySet,
      method: "Groth16",
      compliance: "ASP",
      anonymitySet,
      minimumCustomerAnonymitySet: MINIMUM_FOR_PRIVACY,
      minimumDepositAmount: ctx.minimumDeposit.toString(),
      requiredMinimumDepositAmount: ctx.minimumDeposit.toString(),
      latestAspRoot: `0x${(ctx.indexer?.aspRoot ?? 0n).toString(16).padStart(64, "0")}`,
      indexer: {
        configured: true,
        reachable: ctx.indexer !== null,
        synced: ctx.indexer?.synced ?? false,
        error: ctx.indexerError,
        leafCount: ctx.indexer?.leafCount ?? null,
        stateRootMatches: ctx.indexer?.stateRootMatches ?? false,
        aspRootMatches: ctx.indexer?.aspRootMatches ?? false,
      },
    },
    contracts: { entrypoint: ctx.contracts.entrypoint, privacyPool: ctx.contracts.privacyPool, network: ctx.network },
    stack: "Hardhat 3 contracts (Entrypoint, PrivacyPool, Groth16 verifier), circom 2 + snarkjs, Koa relayer, LeanIMT indexer",
    agentRegistry: {
      enabled: true,
      productionReady: false,
      register: `POST ${ROUTES.agentRegister}`,
      list: `GET ${ROUTES.agentRegister}`,
      lookup: `GET ${ROUTES.agentRegister}?id=agent_<id>`,
      features: ["identity", "per-transaction-limit", "daily-limit", "provider-whitelist", "categories", "spend-tracking"],
      registeredAgents: ctx.agentCount,
      note: "Prototype: it does not establish production authorization.",
    },
    pricing: {
      model: "per-settle take applied through the pool relay fee, plus a one-time access fee per deposit when enforced",
      enforced: ctx.accessFeeEnforced,
      storageBackend: ctx.storageBackend,
      networks: Object.fromEntries(
        [...new Set([...Object.keys(KNOWN_NETWORKS), ctx.network])].map((id) => {
          const network = id === ctx.network ? ctx.pricing : networkPricing(id);
          return [id, { name: network.name, pricingMode: network.pricingMode, note: network.note }];
        }),
      ),
      tiers: {
        standard: tierPrices(TIERS.standard),
        compliance: tierPrices(TIERS.compliance),
        enterprise: { ...ENTERPRISE_TIER, takeBps: Number(ENTERPRISE_TIER.takeBps) },
      },
      treasury: ctx.treasury,
      feeFloor: ctx.feeFloor === null ? null : feeFloorToWire(ctx.feeFloor),
      note: "fee = paymentAmount x takeBps / 10000, paid to the treasury by the pool relay call. free-for-testing networks charge 0 bps.",
      docs: REPO_DOCS,
    },
    settleX402: {
      takeBps: Number(ctx.settleX402.takeBps),
      minimumMaxTimeoutSeconds: ctx.settleX402.window.minimumSeconds,
      maximumMaxTimeoutSeconds: ctx.settleX402.window.maximumSeconds,
      note:
        `A settle-x402 payment takes price + price x takeBps / 10000 (rounded so the payer holds the price) out of the note. ` +
        `It refuses, before anything is spent, a seller entry whose maxTimeoutSeconds is outside this range (proving and funding ` +
        `must fit, plus the ${FACILITATOR_MARGIN_SECONDS} s the seller's facilitator wants left), whose extra.name/extra.version is not ` +
        `the token's EIP-712 domain, or whose payTo is the zero address.`,
    },
    nonCustodial: {
      enabled: true,
      quote: `POST ${ROUTES.quote}`,
      settle: `POST ${ROUTES.settleProof}`,
      quoteX402: `POST ${ROUTES.quoteX402}`,
      settleX402: `POST ${ROUTES.settleX402Proof}`,
      quoteAccessFee: `POST ${ROUTES.quoteAccessFee}`,
      accessFee: `POST ${ROUTES.accessFeeProof}`,
      trees: `GET ${ROUTES.trees}`,
      circuit: "withdraw",
      verificationKeySha256: ctx.nonCustodial.verificationKeySha256,
      quoteTtlSeconds: ctx.nonCustodial.quoteTtlSeconds,
      relayerLearns: RELAYER_LEARNS["non-custodial"],
      custodialRelayerLearns: RELAYER_LEARNS.custodial,
      note:
        "The agent proves its own withdrawal and the relayer only relays it: quote (what the proof must bind), then the trees " +
        "(every public leaf, so that the agent never asks for its own path), prove locally, settle with the proof. The note's secrets, " +
        "value and label never leave the agent. Agents that cannot prove use settle and settle-x402 with the note.",
    },
    endpoints: {
      verify: `POST ${ROUTES.verify}`,
      settle: `POST ${ROUTES.settle}`,
      settleX402: `POST ${ROUTES.settleX402}`,
    },
    links: {
      docs: REPO_DOCS,
      openapi: url(ROUTES.openapi),
      repo: "README.md of this facilitator's repository",
      deposit: `Entrypoint.deposit(${ctx.contracts.usdc}, value, precommitment) at ${ctx.contracts.entrypoint}`,
      sdk: "sdk/ (agent SDK: deposit, note recovery, x402 fetch wrapper)",
      authorize: `POST ${ROUTES.authorize}`,
    },
  };
}

export type SupportedResponse = ReturnType<typeof buildSupported>;

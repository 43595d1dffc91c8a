import type { IndexerStatus } from "../indexer/api.js";
import { ENTERPRISE_TIER, formatUsdc, KNOWN_NETWORKS, networkPricing, TIERS, type NetworkPricing } from "./pricing.js";
import { isPrivate, MINIMUM_FOR_PRIVACY } from "./privacy.js";

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
  baseUrl: string;
}

export const ROUTES = {
  supported: "/api/facilitator/supported",
  verify: "/api/facilitator/verify",
  settle: "/api/facilitator/settle",
  settleX402: "/api/facilitator/settle-x402",
  authorize: "/api/facilitator/authorize",
  withdraw: "/api/withdraw",
  x402Pay: "/api/x402-pay",
  agentRegister: "/api/agent/register",
  openapi: "/api/openapi.json",
} as const;

/** The operator documentation, a path in this facilitator's repository. */
const REPO_DOCS = "docs/relayer.md";

/** Transitions out of pilot that are not made in code; listed while they hold (spec 4.1). */
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

/** GET /api/facilitator/supported: the capability surface of spec 4.1, computed from live state. */
export function buildSupported(ctx: SupportedContext) {
  const anonymitySet = ctx.indexer?.anonymitySet ?? null;
  const privateNow = isPrivate(anonymitySet);
  const blockingReasons = [
    ...(privateNow
      ? []
      : [["ANONYMITY_SET_BELOW_MINIMUM", `The anonymity set is ${anonymitySet ?? "unknown"}; privacy is claimed from ${MINIMUM_FOR_PRIVACY} independent depositors.`] as const]),
    ...(ctx.accessFeeEnforced ? [] : [["PRICING_NOT_ENFORCED", "The access-fee gate is off during the pilot."] as const]),
    ...STANDING_BLOCKERS,
  ].map(([code, message]) => ({ code, message, blocks: ["customer"] }));
  const url = (path: string) => new URL(path, ctx.baseUrl).toString();

  return {
    x402Version: 2,
    facilitator: "x402 privacy facilitator",
    version: "1.0.0",
    status: "pilot",
    description:
      "Pays x402 sellers out of a privacy pool with Groth16 withdrawal proofs, so the agent's wallet never appears as the payer. Compliance through a screened association set (ASP).",
    customerReady: blockingReasons.length === 0,
    pilotReady: true,
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
      note: "fee = paymentAmount x takeBps / 10000, paid to the treasury by the pool relay call. free-for-testing networks charge 0 bps.",
      docs: REPO_DOCS,
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

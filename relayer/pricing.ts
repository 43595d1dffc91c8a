/** Pricing of spec section 8: per-settle take by tier, access fee and minimum settle by network class. */

export type PricingMode = "free-for-testing" | "paid";
export type TierName = "standard" | "compliance" | "enterprise";

/** Which column of spec section 8 a network reads: mainnet values, or test-network ("sepolia") values. */
export type NetworkClass = "mainnet" | "test";

export interface NetworkPricing {
  name: string;
  networkClass: NetworkClass;
  pricingMode: PricingMode;
  note: string;
}

export const BPS_DENOMINATOR = 10_000n;

interface PaidTier {
  takeBps: bigint;
  accessFee: Record<NetworkClass, bigint>;
  minimumSettle: Record<NetworkClass, bigint>;
  target: string;
}

const STANDARD_VALUES = {
  takeBps: 500n,
  accessFee: { test: 1_000n, mainnet: 5_000n },
  minimumSettle: { test: 40_000n, mainnet: 20_000n },
};

export const TIERS = {
  standard: { ...STANDARD_VALUES, target: "Agents and developers paying x402 APIs privately; no SLA, no compliance attestation." },
  compliance: { ...STANDARD_VALUES, target: "Teams that need audit-ready receipts of the ASP screening behind each settlement." },
} satisfies Record<Exclude<TierName, "enterprise">, PaidTier>;

export const ENTERPRISE_TIER = {
  takeBps: 0n,
  subscription: "custom",
  target: "High-volume operators with their own compliance programme.",
  howToAccess: "Onboarded out of band by the operator; not available through the authorize endpoint.",
};

/** Networks the facilitator knows by CAIP-2 id. The local chain reads the test-network values (DESIGN.md 5). */
export const KNOWN_NETWORKS: Record<string, Omit<NetworkPricing, "pricingMode"> & { defaultMode: PricingMode }> = {
  "eip155:8453": { name: "Base", networkClass: "mainnet", defaultMode: "paid", note: "Production; the tier's take applies." },
  "eip155:84532": {
    name: "Base Sepolia",
    networkClass: "test",
    defaultMode: "free-for-testing",
    note: "Free for development; fees are paid in faucet-funded test USDC.",
  },
  "eip155:31337": {
    name: "Local development chain",
    networkClass: "test",
    defaultMode: "free-for-testing",
    note: "Embedded Hardhat chain; test-network values.",
  },
};

export function networkPricing(network: string, modeOverride?: PricingMode): NetworkPricing {
  const known = KNOWN_NETWORKS[network];
  // An unknown chain (e.g. a fork under its own id) is priced as a test network unless configured otherwise.
  const base = known ?? { name: network, networkClass: "test" as const, defaultMode: "free-for-testing" as const, note: "Unlisted network; test-network values." };
  return { name: base.name, networkClass: base.networkClass, note: base.note, pricingMode: modeOverride ?? base.defaultMode };
}

/** The take the pool relay charges: the tier's bps on paid networks, 0 on free-for-testing ones. */
export function takeBpsFor(tier: TierName, pricing: NetworkPricing): bigint {
  if (pricing.pricingMode === "free-for-testing" || tier === "enterprise") return 0n;
  return TIERS[tier].takeBps;
}

/** fee = amount * bps / 10000, rounded down exactly as Entrypoint.relay does. */
export function feeOf(amount: bigint, bps: bigint): bigint {
  return (amount * bps) / BPS_DENOMINATOR;
}

/**
 * The smallest gross withdrawal whose net (gross - fee(gross)) covers `net` (DESIGN.md 5: the settle-x402
 * payer must hold exactly the seller's amount after the take).
 */
export function grossForNet(net: bigint, bps: bigint): bigint {
  if (bps === 0n) return net;
  // ceil(net * D / (D - bps)) always covers net; rounding the fee down can let a slightly smaller gross do too.
  let gross = (net * BPS_DENOMINATOR + (BPS_DENOMINATOR - bps) - 1n) / (BPS_DENOMINATOR - bps);
  while (gross - 1n - feeOf(gross - 1n, bps) >= net) gross--;
  return gross;
}

export function minimumSettleFor(tier: TierName, pricing: NetworkPricing): bigint {
  return tier === "enterprise" ? 0n : TIERS[tier].minimumSettle[pricing.networkClass];
}

export function accessFeeFor(tier: TierName, pricing: NetworkPricing): bigint {
  return tier === "enterprise" ? 0n : TIERS[tier].accessFee[pricing.networkClass];
}

/** Atomic USDC as a decimal USDC string with six places ("40000" -> "0.040000"). */
export function formatUsdc(atomic: bigint): string {
  const whole = atomic / 1_000_000n;
  const fraction = (atomic % 1_000_000n).toString().padStart(6, "0");
  return `${whole}.${fraction}`;
}

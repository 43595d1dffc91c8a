/** Pricing of docs/api.md section 8: per-settle take by tier, access fee and minimum settle by network class. */

import { BPS_DENOMINATOR } from "../../sdk/fees/relay-fee.js";

export { BPS_DENOMINATOR, feeOf, grossForNet } from "../../sdk/fees/relay-fee.js";

export type PricingMode = "free-for-testing" | "paid";
export type TierName = "standard" | "compliance" | "enterprise";

/** Which column of docs/api.md section 8 a network reads: mainnet values, or test-network ("sepolia") values. */
export type NetworkClass = "mainnet" | "test";

export interface NetworkPricing {
  name: string;
  networkClass: NetworkClass;
  pricingMode: PricingMode;
  note: string;
}


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

/** Networks the facilitator knows by CAIP-2 id. The local chain reads the test-network values (docs/design.md 5). */
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

/**
 * The ETH price in atomic USDC the fee floor converts gas with when RELAYER_USDC_PER_ETH is unset. Real chains: 3000,
 * to be set near the market. The local chain (31337: a plain node at about 1 gwei, hundreds of times Base's gas
 * price, or a fork of Base, which keeps that id): 2, so a 5% take of a 0.05 USDC payment covers the floor (about
 * 1.4k atomic at 1 gwei) and paid mode can be tried with small payments; its ETH is worth nothing.
 */
export function defaultUsdcPerEth(network: string): bigint {
  return network === "eip155:31337" ? 2_000_000n : 3_000_000_000n;
}

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

/**
 * Gas of one `Entrypoint.relay` at a state tree of `depth`, an upper bound measured with the real contracts and
 * real proofs (test/relayer/relay-gas.test.ts checks it against relays' gasUsed). Everything but the change note's
 * insert is fixed: the Groth16 verifier, the payment's transfer and the take's accrual, at their dearest when the
 * recipient's USDC balance and the treasury's accrued fees are still zero (a fresh payer always is; a treasury is
 * before its first fee). The insert costs at most one Poseidon2 hash and a cold side-node read (about 12.2k gas)
 * per level, when every bit of its leaf index is set. Measured worst case, treasury at zero: 409.4k at depth 1 (the insert deepens the tree
 * and writes its first side node at the new level); an x402 relay, whose RelayData names its payment, costs about
 * 1k more for the nonce's calldata and the payment's record. A tree of depth 0 or 1 deepens on the next insert,
 * which costs what depth 1 does.
 */
export const RELAY_GAS = { base: 399_000n, perLevel: 12_250n } as const;

export function relayGasAt(depth: bigint): bigint {
  return RELAY_GAS.base + RELAY_GAS.perLevel * (depth > 1n ? depth : 1n);
}

/** The smallest gross whose take (rounded down as the relay does) reaches `fee`; undefined when no take is charged. */
export function smallestGrossForFee(fee: bigint, bps: bigint): bigint | undefined {
  if (fee === 0n) return 1n;
  if (bps === 0n) return undefined;
  return (fee * BPS_DENOMINATOR + bps - 1n) / bps;
}

/** Decimal USDC ("3000", "2512.5") as atomic USDC; at most six decimal places. */
export function parseUsdc(decimal: string): bigint {
  const [whole = "", fraction = ""] = decimal.split(".");
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, "0"));
}

/** What a relay costs now, in atomic USDC: the least take a spend must pay while a take is charged. */
export interface FeeFloor {
  /** The pool's state tree depth, which the relay's insert hashes through. */
  depth: bigint;
  /** relayGasAt(depth): the most gas a relay at this depth uses. */
  relayGas: bigint;
  gasPriceWei: bigint;
  usdcPerEth: bigint;
  /** relayGas x gasPriceWei in atomic USDC, rounded up. */
  floor: bigint;
  /**
   * Whether a spend's take must reach the floor: when a take is charged (paid mode). On free-for-testing
   * networks the operator pays relays knowingly; the minimum settle still applies.
   */
  enforced: boolean;
  /** The smallest withdrawal (gross) the minimum settle and, when enforced, the floor let through. */
  smallestGross: bigint;
}

import { z } from "zod";

const atomicPrice = z
  .object({ sepoliaAtomic: z.string(), sepoliaUsdc: z.string(), mainnetAtomic: z.string(), mainnetUsdc: z.string() })
  .strict();

const paidTier = z
  .object({ takeBps: z.number().int(), takePercent: z.string(), accessFee: atomicPrice, minimumSettle: atomicPrice, target: z.string() })
  .strict();

/** GET /api/facilitator/supported (docs/api.md 4.1 and the pricing object of docs/api.md 8), field for field. */
export const SupportedResponseSchema = z
  .object({
    x402Version: z.literal(2),
    facilitator: z.string(),
    version: z.literal("1.0.0"),
    status: z.literal("pilot"),
    description: z.string(),
    customerReady: z.boolean(),
    pilotReady: z.boolean(),
    verificationReady: z.boolean(),
    blockingReasons: z.array(
      z
        .object({
          code: z.enum([
            "INDEXER_UNAVAILABLE",
            "INDEXER_COLD",
            "ANONYMITY_SET_BELOW_MINIMUM",
            "PRICING_NOT_ENFORCED",
            "MAINNET_E2E_NOT_VERIFIED",
            "LEGAL_CLEARANCE_NOT_APPROVED",
            "CUSTOMER_PULL_NOT_CONFIRMED",
            "ANONYMITY_SET_PROVENANCE_NOT_VERIFIED",
          ]),
          message: z.string(),
          blocks: z.array(z.string()),
        })
        .strict(),
    ),
    supported: z.array(
      z.object({ scheme: z.literal("exact"), network: z.string(), asset: z.string(), symbol: z.literal("USDC"), decimals: z.literal(6) }).strict(),
    ),
    pilot: z
      .object({
        enabled: z.boolean(),
        private: z.boolean(),
        anonymitySet: z.number().int().nullable(),
        minimumForPrivacy: z.literal(30),
        howToJoin: z.string(),
      })
      .strict(),
    privacy: z
      .object({
        enabled: z.boolean(),
        verificationReady: z.boolean(),
        organicAnonymitySet: z.number().int().nullable(),
        method: z.literal("Groth16"),
        compliance: z.literal("ASP"),
        anonymitySet: z.number().int().nullable(),
        minimumCustomerAnonymitySet: z.literal(30),
        minimumDepositAmount: z.string(),
        requiredMinimumDepositAmount: z.string(),
        latestAspRoot: z.string().regex(/^0x[0-9a-f]{64}$/),
        indexer: z
          .object({
            configured: z.boolean(),
            /** Whether the indexer answered this request's status query (live). */
            reachable: z.boolean(),
            /** Whether it has caught up with the chain since it started. */
            synced: z.boolean(),
            /** Why it could not be reached, null when it was. */
            error: z.string().nullable(),
            leafCount: z.number().int().nullable(),
            stateRootMatches: z.boolean(),
            aspRootMatches: z.boolean(),
          })
          .strict(),
      })
      .strict(),
    contracts: z.object({ entrypoint: z.string(), privacyPool: z.string(), network: z.string() }).strict(),
    stack: z.string(),
    agentRegistry: z
      .object({
        enabled: z.boolean(),
        productionReady: z.boolean(),
        register: z.string(),
        list: z.string(),
        lookup: z.string(),
        features: z.array(z.string()),
        registeredAgents: z.number().int(),
        note: z.string(),
      })
      .strict(),
    pricing: z
      .object({
        model: z.string(),
        enforced: z.boolean(),
        storageBackend: z.enum(["sqlite", "postgres"]),
        networks: z.record(
          z.string(),
          z.object({ name: z.string(), pricingMode: z.enum(["free-for-testing", "paid"]), note: z.string() }).strict(),
        ),
        tiers: z
          .object({
            standard: paidTier,
            compliance: paidTier,
            enterprise: z
              .object({ takeBps: z.literal(0), subscription: z.string(), target: z.string(), howToAccess: z.string() })
              .strict(),
          })
          .strict(),
        treasury: z.string(),
        /** The fee floor now (relayer/pricing/pricing.ts); null when the chain cannot be read. */
        feeFloor: z
          .object({
            enforced: z.boolean(),
            stateTreeDepth: z.number().int(),
            relayGas: z.string().regex(/^[0-9]+$/),
            gasPriceWei: z.string().regex(/^[0-9]+$/),
            usdcPerEth: z.string(),
            floorAtomic: z.string().regex(/^[0-9]+$/),
            floorUsdc: z.string(),
            smallestWithdrawalAtomic: z.string().regex(/^[0-9]+$/),
            note: z.string(),
          })
          .strict()
          .nullable(),
        note: z.string(),
        docs: z.string(),
      })
      .strict(),
    settleX402: z
      .object({
        takeBps: z.number().int(),
        minimumMaxTimeoutSeconds: z.number().int(),
        maximumMaxTimeoutSeconds: z.number().int(),
        note: z.string(),
      })
      .strict(),
    /** Non-custodial settles (docs/api.md 4.10): the agent proves, the relayer relays. */
    nonCustodial: z
      .object({
        enabled: z.boolean(),
        quote: z.string(),
        settle: z.string(),
        quoteX402: z.string(),
        settleX402: z.string(),
        /** An access fee paid out of the note itself (docs/relayer.md "Access fee"): its quote and its proof-carrying request. */
        quoteAccessFee: z.string(),
        accessFee: z.string(),
        trees: z.string(),
        circuit: z.literal("withdraw"),
        /** SHA-256 (hex) of sdk/artifacts/withdraw.vkey.json: an agent proves only with the same circuit. */
        verificationKeySha256: z.string().regex(/^[0-9a-f]{64}$/),
        quoteTtlSeconds: z.number().int(),
        relayerLearns: z.string(),
        custodialRelayerLearns: z.string(),
        note: z.string(),
      })
      .strict(),
    endpoints: z.object({ verify: z.string(), settle: z.string(), settleX402: z.string() }).strict(),
    links: z
      .object({ docs: z.string(), openapi: z.string(), repo: z.string(), deposit: z.string(), sdk: z.string(), authorize: z.string() })
      .strict(),
  })
  .strict();

import { z } from "zod";
import { loadEnvConfig } from "../lib/env-config.js";
import { AddressSchema } from "../sdk/schema/primitives.js";

/** The environment variable behind each config key of the demo seller (docs/x402-interop.md). */
export const SELLER_DEMO_ENV = {
  rpcUrl: "SELLER_DEMO_RPC_URL",
  facilitatorPrivateKey: "SELLER_DEMO_FACILITATOR_KEY",
  payTo: "SELLER_DEMO_PAY_TO",
  priceAtomic: "SELLER_DEMO_PRICE",
  addressBook: "SELLER_DEMO_ADDRESS_BOOK",
  basePort: "SELLER_DEMO_BASE_PORT",
  shieldedFacilitatorUrl: "SELLER_DEMO_SHIELDED_FACILITATOR_URL",
} as const;

export const SellerDemoConfigSchema = z
  .object({
    rpcUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) JSON-RPC URL" }).default("http://127.0.0.1:8545"),
    /** Pays the gas of the settlements: any funded account of the chain. */
    facilitatorPrivateKey: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte private key"),
    payTo: AddressSchema,
    priceAtomic: z.string().regex(/^[1-9][0-9]*$/, "must be a positive atomic USDC amount such as 50000").default("50000"),
    /** deployments/<chainId>.json of the RPC's chain when absent; its `usdc` is the asset sold for. */
    addressBook: z.string().min(1).optional(),
    /**
     * A facilitator of shielded-proof payments (the relayer's `<base>/api/seller`): a seller paid straight from the pool
     * then listens on base port +4.
     */
    shieldedFacilitatorUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
    /**
     * The facilitator listens here, the v2 seller on +1, the v1 seller on +2, the plain 402 on +3 (the shielded-proof
     * seller on +4, the tab seller on +5).
     */
    basePort: z
      .string()
      .regex(/^[0-9]+$/, "must be a port number")
      .transform(Number)
      .pipe(z.number().int().min(1).max(65_530))
      .default(4020),
  })
  .strict();

export type SellerDemoConfig = z.infer<typeof SellerDemoConfigSchema>;

export function loadSellerDemoConfig(env: NodeJS.ProcessEnv): SellerDemoConfig {
  return loadEnvConfig(SELLER_DEMO_ENV, SellerDemoConfigSchema, env);
}

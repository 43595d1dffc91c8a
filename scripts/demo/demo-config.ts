import { z } from "zod";
import { loadEnvConfig } from "../../lib/env-config.js";
import { AddressSchema } from "../../sdk/schema/primitives.js";

/** The environment variable behind each demo setting (README, "Running the demo elsewhere"). */
export const DEMO_ENV = {
  rpcUrl: "DEMO_RPC_URL",
  chainPort: "DEMO_CHAIN_PORT",
  addressBook: "DEMO_ADDRESS_BOOK",
  depositAtomic: "DEMO_DEPOSIT_ATOMIC",
  priceAtomic: "DEMO_PRICE_ATOMIC",
  agentPrivateKey: "DEMO_AGENT_PRIVATE_KEY",
  relayerPrivateKey: "DEMO_RELAYER_PRIVATE_KEY",
  postmanPrivateKey: "DEMO_POSTMAN_PRIVATE_KEY",
  sellerFacilitatorKey: "DEMO_SELLER_FACILITATOR_KEY",
  treasury: "DEMO_TREASURY_ADDRESS",
  payTo: "DEMO_PAY_TO",
} as const;

const privateKey = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte private key");
const atomic = z.string().regex(/^[1-9][0-9]*$/, "must be a positive atomic USDC amount").transform(BigInt);

export const DemoConfigSchema = z
  .object({
    /** An existing chain (a fork from `npm run chain:fork`, or Base Sepolia) instead of a fresh hardhat node. */
    rpcUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** Port of the fresh hardhat node; default: a free one. */
    chainPort: z.string().regex(/^[0-9]+$/).transform(Number).optional(),
    /** The existing chain's address book; default deployments/<chainId>.json. */
    addressBook: z.string().min(1).optional(),
    depositAtomic: atomic.default(2_000_000n),
    /** The demo seller's price; at least the test network's minimum settle of 40000. */
    priceAtomic: atomic.default(50_000n),
    agentPrivateKey: privateKey.optional(),
    relayerPrivateKey: privateKey.optional(),
    postmanPrivateKey: privateKey.optional(),
    sellerFacilitatorKey: privateKey.optional(),
    treasury: AddressSchema.optional(),
    payTo: AddressSchema.optional(),
  })
  .strict();

export type DemoConfig = z.infer<typeof DemoConfigSchema>;

export function loadDemoConfig(env: NodeJS.ProcessEnv): DemoConfig {
  return loadEnvConfig(DEMO_ENV, DemoConfigSchema, env);
}

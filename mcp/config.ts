import { z } from "zod";
import { loadEnvConfig } from "../lib/env-config.js";
import { Bytes32Schema } from "../sdk/schema/primitives.js";

/** The environment variable behind each setting of the MCP server (docs/sdk.md, "MCP server"). */
export const MCP_ENV = {
  facilitatorUrl: "X402_FACILITATOR_URL",
  rpcUrl: "X402_RPC_URL",
  rpcConfirmations: "X402_RPC_CONFIRMATIONS",
  addressBook: "X402_ADDRESS_BOOK",
  seed: "X402_SEED",
  vaultFile: "X402_VAULT_FILE",
  vaultPassphrase: "X402_VAULT_PASSPHRASE",
  maxPaymentAtomic: "X402_MAX_PAYMENT_ATOMIC",
  budgetAtomic: "X402_BUDGET_ATOMIC",
  confirmPayments: "X402_CONFIRM_PAYMENTS",
  acceptNotPrivate: "X402_ACCEPT_NOT_PRIVATE",
  custody: "X402_CUSTODY",
  depositorPrivateKey: "X402_DEPOSITOR_PRIVATE_KEY",
  tabsDirectory: "X402_TABS_DIRECTORY",
  tabDepositAtomic: "X402_TAB_DEPOSIT_ATOMIC",
  tabLifetimeSeconds: "X402_TAB_LIFETIME_SECONDS",
} as const;

const atomic = z.string().regex(/^[1-9][0-9]*$/, "must be a positive amount of atomic USDC (1 USDC = 1000000)").transform(BigInt);
const flag = z.enum(["true", "false"], "must be true or false").transform((value) => value === "true");

export const McpConfigSchema = z
  .object({
    /** The pinned facilitator (https, or http on loopback). */
    facilitatorUrl: z.url({ protocol: /^https?$/ }),
    /**
     * The chain's JSON-RPC, chosen by the agent's owner: deposits and recovery from the seed read and write the pool
     * there, and every payment's roots are checked against it (the facilitator's own word is never enough).
     */
    rpcUrl: z.url({ protocol: /^https?$/ }),
    /**
     * How far behind the head the agent reads the pool's roots through rpcUrl, the RPC the agent checks every
     * facilitator's trees against (X402AgentOptions.ownRpc); default 0 on a local chain, else 2.
     */
    rpcConfirmations: z.string().regex(/^[0-9]+$/, "must be a whole number of blocks").transform(Number).optional(),
    /** The chain's address book; default deployments/<chainId>.json. */
    addressBook: z.string().min(1).optional(),
    /** The wallet seed every note derives from: whoever holds it can spend them. */
    seed: Bytes32Schema,
    /** The encrypted note vault; created at the first start. */
    vaultFile: z.string().min(1),
    vaultPassphrase: z.string().min(1),
    /** The most one payment may cost, take excluded. No default: an agent spends nothing without its owner's cap. */
    maxPaymentAtomic: atomic,
    /** The most this server may take out of the notes while it runs, take included. */
    budgetAtomic: atomic,
    /** Whether a paid fetch first answers the price and pays only once called again with it confirmed. */
    confirmPayments: flag.default(false),
    /** Pay while the pool is below the privacy minimum, knowing the payment is not private. */
    acceptNotPrivate: flag.default(false),
    custody: z.enum(["auto", "non-custodial", "custodial"]).default("auto"),
    /** The key the deposit tool pays deposits from; without it the tool refuses. */
    depositorPrivateKey: Bytes32Schema.optional(),
    /** Where the private tabs' running totals are kept; set, sellers offering batch-settlement are paid by tab. */
    tabsDirectory: z.string().min(1).optional(),
    /** What a new tab holds (default the SDK's, 0.95 USDC). */
    tabDepositAtomic: atomic.optional(),
    /** How long one tab pays, seconds (default the SDK's, 1 day). */
    tabLifetimeSeconds: z.string().regex(/^[1-9][0-9]*$/, "must be a positive number of seconds").transform(Number).optional(),
  })
  .strict();

export type McpConfig = z.infer<typeof McpConfigSchema>;

/** The server's config from `env`; a ConfigError names every missing or invalid variable at once. */
export function loadMcpConfig(env: NodeJS.ProcessEnv): McpConfig {
  return loadEnvConfig(MCP_ENV, McpConfigSchema, env);
}

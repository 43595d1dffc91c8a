import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { JsonRpcProvider, Wallet } from "ethers";
import { pino } from "pino";
import { resolveAddressBook } from "../lib/address-book.js";
import { ConfigError } from "../lib/env-config.js";
import { NoteVault, VaultError, X402Agent } from "../sdk/agent/index.js";
import { FacilitatorClient } from "../sdk/client/facilitator-client.js";
import { loadMcpConfig, MCP_ENV } from "./config.js";
import { agentEventRouter, registerWalletTools } from "./wallet-tools.js";

// stdout is the protocol's channel: every log line goes to stderr, and none carries the seed, a key or a note.
const logger = pino(pino.destination(2));

async function main(): Promise<void> {
  const config = loadMcpConfig(process.env);
  const provider = new JsonRpcProvider(config.rpcUrl);
  const chainId = Number((await provider.getNetwork()).chainId);
  const addressBook = await resolveAddressBook(chainId, config.addressBook, MCP_ENV.addressBook);
  const vault = await openOrCreateVault(config.vaultFile, config.vaultPassphrase);
  // Notes a crash left held by a payment whose outcome it lost: settled from the chain before anything is paid.
  const reconciled = await vault.reconcile({ provider, addressBook });
  const facilitator = new FacilitatorClient(config.facilitatorUrl);
  const agentEvents = agentEventRouter();
  const agent = new X402Agent({
    facilitator,
    notes: vault,
    network: { chainId, asset: addressBook.usdc },
    custody: config.custody,
    ownRpc: { url: config.rpcUrl, privacyPool: addressBook.privacyPool, confirmations: config.rpcConfirmations },
    acceptNotPrivate: config.acceptNotPrivate,
    maxPaymentAtomic: config.maxPaymentAtomic,
    budgetAtomic: config.budgetAtomic,
    ...(config.tabsDirectory !== undefined && {
      tabs: { channelDirectory: config.tabsDirectory, depositAtomic: config.tabDepositAtomic, lifetimeSeconds: config.tabLifetimeSeconds },
    }),
    onEvent: agentEvents.onEvent,
  });

  const server = new McpServer({ name: "x402-private-payments", version: "0.1.0" });
  registerWalletTools(server, {
    agent,
    agentEvents,
    facilitator,
    vault,
    provider,
    addressBook,
    seed: config.seed,
    maxPaymentAtomic: config.maxPaymentAtomic,
    budgetAtomic: config.budgetAtomic,
    confirmPayments: config.confirmPayments,
    acceptNotPrivate: config.acceptNotPrivate,
    ...(config.depositorPrivateKey !== undefined && { depositor: new Wallet(config.depositorPrivateKey, provider) }),
  });
  await server.connect(new StdioServerTransport());
  const reservations = { released: reconciled.released.length, spent: reconciled.spent.length, pending: reconciled.pending.length };
  logger.info({ facilitator: facilitator.url, chainId, vaultFile: config.vaultFile, confirmPayments: config.confirmPayments, reservations }, "x402 private payments MCP server ready on stdio");
}

/** The vault at `file`, created empty at the first start. */
async function openOrCreateVault(file: string, passphrase: string): Promise<NoteVault> {
  try {
    return await NoteVault.open(file, passphrase);
  } catch (error) {
    if (error instanceof VaultError && error.code === "VAULT_NOT_FOUND") return NoteVault.create(file, passphrase);
    throw error;
  }
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    logger.error({ problems: error.problems }, `The MCP server cannot start:\n${error.message}`);
  } else {
    logger.error({ err: error instanceof Error ? { name: error.name, message: error.message } : String(error) }, "The MCP server cannot start");
  }
  process.exit(1);
});

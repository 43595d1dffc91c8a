import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import { JsonRpcProvider, Wallet } from "ethers";
import { ConfigError } from "../lib/env-config.js";
import { resolveAddressBook } from "../lib/address-book.js";
import { startBatchSettlementSeller } from "./batch-settlement-seller.js";
import { loadSellerDemoConfig, SELLER_DEMO_ENV, type SellerDemoConfig } from "./demo-config.js";
import { caip2NetworkOf, v1NetworkOf } from "../sdk/x402/networks.js";
import { startPlain402 } from "./plain-402.js";
import { startReferenceFacilitator } from "./reference-facilitator.js";
import { startSeller } from "./seller.js";

/**
 * The demo's x402 peers on a chain with our contracts deployed: the reference facilitator, a v2 and (where the
 * chain has a v1 name) a v1 reference seller of GET /weather for the deployment's USDC, a plain 402, when a
 * shielded-proof facilitator is named, a seller paid straight from the pool through it, and where the chain has x402's
 * batch-settlement contract, a seller of private tabs.
 */
async function main(): Promise<void> {
  const config = loadSellerDemoConfig(process.env);
  const provider = new JsonRpcProvider(config.rpcUrl);
  const chainId = Number((await provider.getNetwork()).chainId);
  provider.destroy();
  const { usdc } = await resolveAddressBook(chainId, config.addressBook, SELLER_DEMO_ENV.addressBook);

  // Where the chain has x402's batch-settlement contract (Base; `npm run stack` places it), the facilitator settles
  // private tabs too, for a seller of them.
  const tabs = await hasCode(config.rpcUrl, BATCH_SETTLEMENT_ADDRESS);
  const facilitator = await startReferenceFacilitator({
    rpcUrl: config.rpcUrl,
    chainId,
    privateKey: config.facilitatorPrivateKey as `0x${string}`,
    port: config.basePort,
    batchSettlement: tabs,
  });
  const sellerOptions = { facilitatorUrl: facilitator.url, payTo: config.payTo, asset: usdc, amountAtomic: config.priceAtomic };
  const v2Seller = await startSeller({ ...sellerOptions, x402Version: 2, network: caip2NetworkOf(chainId), port: config.basePort + 1 });
  const v1Network = v1NetworkOf(chainId);
  const v1Seller =
    v1Network === undefined
      ? undefined
      : await startSeller({ ...sellerOptions, x402Version: 1, network: v1Network, port: config.basePort + 2 });
  const plain402 = await startPlain402(config.basePort + 3);
  const shieldedSeller =
    config.shieldedFacilitatorUrl === undefined
      ? undefined
      : await startSeller({
          ...sellerOptions,
          facilitatorUrl: config.shieldedFacilitatorUrl,
          x402Version: 2,
          network: caip2NetworkOf(chainId),
          offers: "shielded-proof",
          port: config.basePort + 4,
        });

  const tabSeller = tabs ? await startTabSeller({ ...config, facilitatorUrl: facilitator.url }, chainId, usdc) : undefined;

  console.log(`reference facilitator ${facilitator.url} on eip155:${chainId}, settling from ${facilitator.address}`);
  console.log(`v2 seller             ${v2Seller.resourceUrl}: ${config.priceAtomic} of USDC ${usdc} to ${config.payTo}`);
  console.log(`v1 seller             ${v1Seller?.resourceUrl ?? `none: chain ${chainId} has no x402 v1 name`}`);
  console.log(`plain 402             ${plain402.url}`);
  if (shieldedSeller !== undefined) console.log(`shielded-proof seller ${shieldedSeller.resourceUrl}: paid straight from the pool, relayed by ${config.shieldedFacilitatorUrl}`);
  if (tabSeller !== undefined) console.log(`tab seller            ${tabSeller.resourceUrl}: ${tabPriceOf(config)} a request on x402's batch-settlement`);

  await new Promise<void>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve());
  });
  await Promise.all([v2Seller, v1Seller, plain402, shieldedSeller, tabSeller].map((server) => server?.close()));
  await facilitator.close();
}

async function hasCode(rpcUrl: string, address: string): Promise<boolean> {
  const provider = new JsonRpcProvider(rpcUrl);
  try {
    return (await provider.getCode(address)) !== "0x";
  } finally {
    provider.destroy();
  }
}

/**
 * What the tab seller asks a request: half the others' price, as a per-call price is smaller than a one-off one (at
 * the default 0.05 USDC, 0.025: the agent's default tab of 0.95 USDC pays 38 requests).
 */
const tabPriceOf = (config: SellerDemoConfig) => (BigInt(config.priceAtomic) / 2n).toString();

/** The tab seller on base port +5: @x402/evm's batch-settlement scheme, its claims signed by a key of its own, its channels in a fresh folder. */
function startTabSeller(config: SellerDemoConfig & { facilitatorUrl: string }, chainId: number, usdc: string) {
  return startBatchSettlementSeller({
    facilitatorUrl: config.facilitatorUrl,
    network: caip2NetworkOf(chainId),
    payTo: config.payTo as `0x${string}`,
    asset: usdc as `0x${string}`,
    amountAtomic: tabPriceOf(config),
    receiverAuthorizerKey: Wallet.createRandom().privateKey as `0x${string}`,
    storageDirectory: mkdtempSync(path.join(tmpdir(), "tab-seller-")),
    port: config.basePort + 5,
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exitCode = 1;
});

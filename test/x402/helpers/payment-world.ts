import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ChannelStorage } from "@x402/evm/batch-settlement/server";
import { JsonRpcProvider, Wallet, type Signer } from "ethers";
import type { Registry } from "prom-client";
import { depositNotes, NoteVault, X402Agent, type AgentEvent, type X402AgentOptions } from "../../../sdk/agent/index.js";
import { FacilitatorClient } from "../../../sdk/client/facilitator-client.js";
import type { Note } from "../../../sdk/index.js";
import { caip2NetworkOf, v1NetworkOf } from "../../../sdk/x402/networks.js";
import { placeBatchSettlementPeer, type BatchSettlementPeer } from "../../../x402-peers/batch-settlement.js";
import { startBatchSettlementSeller } from "../../../x402-peers/batch-settlement-seller.js";
import { startPlain402 } from "../../../x402-peers/plain-402.js";
import { startReferenceFacilitator, type ReferenceFacilitator } from "../../../x402-peers/reference-facilitator.js";
import { startSeller, type Seller, type SellerOptions } from "../../../x402-peers/seller.js";
import type { IndexerConfig } from "../../../indexer/config.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../../indexer/helpers/local-chain.js";
import { buildRelayerConfig, relayerKey, startRelayer, treasury, type RunningRelayer } from "../../relayer/helpers/relayer-harness.js";

/** The passphrase of every vault newAgent makes. */
export const AGENT_PASSPHRASE = "agent passphrase";

export interface PaymentWorldOptions {
  /** The sellers' price in atomic USDC; at least the test network's minimum settle (40000). */
  price?: bigint;
  /** Relayer config overrides (env-style strings); the default charges the standard 5% take. */
  relayer?: Record<string, string>;
  /** The access-fee gate on: the entrypoint's treasury is set to the relayer's before the relayer starts. */
  accessFeeEnforced?: boolean;
  /**
   * Runs once the chain is deployed, before the indexer starts on `indexerConfig` (its database still empty): e.g.
   * to put the pool and that database in the state of a pool that already holds many deposits.
   */
  beforeIndexer?: (chain: LocalChain, indexerConfig: IndexerConfig) => Promise<void>;
  /** Blocks mined within one second share its timestamp, so the chain's clock never runs ahead (startLocalChain). */
  wallClockBlocks?: boolean;
}

/**
 * The whole payment path on a local chain, every piece real: our contracts, the indexer with its ASP curator,
 * the relayer, and on the seller's side the reference x402 facilitator with a v2 and a v1 reference seller and
 * a plain (non-x402) 402 paywall.
 */
export async function startPaymentWorld(options: PaymentWorldOptions = {}) {
  const price = options.price ?? 50_000n;
  const chain = await startLocalChain({ wallClockBlocks: options.wallClockBlocks });
  const { usdc } = chain.facilitator;
  const { networkHelpers } = chain.connection;
  const chainId = chain.facilitator.addressBook.chainId;
  const asset = await usdc.getAddress();

  const indexerConfig = buildIndexerConfig(chain);
  await options.beforeIndexer?.(chain, indexerConfig);
  const indexer = await startIndexer(indexerConfig);
  if (options.accessFeeEnforced) await (await chain.facilitator.entrypoint.setAccessFeeTreasury(treasury.address)).wait();
  const gate: Record<string, string> = options.accessFeeEnforced ? { accessFeeEnforced: "true" } : {};
  // The seller routes settle plain (EIP-3009) payments from a key of their own, funded for their gas.
  const relayerEip3009Key = Wallet.createRandom();
  await networkHelpers.setBalance(relayerEip3009Key.address, 10n ** 18n);
  const relayer = await startRelayer(
    buildRelayerConfig(chain, indexer, { pricingMode: "paid", sellerEip3009PrivateKey: relayerEip3009Key.privateKey, ...gate, ...options.relayer }),
  );

  const sellerFacilitatorKey = Wallet.createRandom();
  await networkHelpers.setBalance(sellerFacilitatorKey.address, 10n ** 18n);
  const x402Facilitator: ReferenceFacilitator = await startReferenceFacilitator({
    rpcUrl: chain.rpc.url,
    chainId,
    privateKey: sellerFacilitatorKey.privateKey as `0x${string}`,
  });
  const sellerOptions = { facilitatorUrl: x402Facilitator.url, asset, amountAtomic: price.toString() };
  const payTo = { v2: Wallet.createRandom().address, v1: Wallet.createRandom().address };
  const sellers = {
    v2: await startSeller({ ...sellerOptions, x402Version: 2, network: caip2NetworkOf(chainId), payTo: payTo.v2 }),
    v1: await startSeller({ ...sellerOptions, x402Version: 1, network: v1NetworkOf(chainId) ?? "", payTo: payTo.v1 }),
  };
  const plain402 = await startPlain402();
  const provider = new JsonRpcProvider(chain.rpc.url, chainId, { staticNetwork: true });

  /** Follows the chain once and publishes the ASP root, as the indexer's follow loop does. */
  const syncIndexer = async () => {
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
  };

  /**
   * Runs `act` while the indexer follows the chain, as a deployed indexer does (every 100 ms here): a note made
   * during `act` (an access fee's change note) is read before `act` spends it.
   */
  const whileIndexerFollows = async <T>(act: () => Promise<T>): Promise<T> => {
    const stop = new AbortController();
    const following = indexer.indexer.sync.follow(stop.signal, 100);
    try {
      return await act();
    } finally {
      stop.abort();
      await following;
    }
  };

  /**
   * An agent with its own seed and note vault that deposits `value` from `wallet` through the SDK (several values: a
   * wallet of several notes, one deposit each), once the ASP approved it: what the agent author's code does before
   * its first payment.
   */
  const newAgent = async (wallet: Signer, value: bigint | readonly bigint[], agentOptions: Partial<X402AgentOptions> = {}) => {
    const seed = Wallet.createRandom().privateKey;
    const vaultFile = path.join(mkdtempSync(path.join(tmpdir(), "agent-vault-")), "notes.vault");
    const vault = await NoteVault.create(vaultFile, AGENT_PASSPHRASE);
    const values = typeof value === "bigint" ? [value] : value;
    await (await usdc.mint(wallet, values.reduce((sum, each) => sum + each, 0n))).wait();
    const deposits = await depositNotes({ signer: wallet, addressBook: chain.facilitator.addressBook, values, seed });
    for (const { note } of deposits) await vault.save(note);
    await syncIndexer();
    const events: AgentEvent[] = [];
    const agent = new X402Agent({
      facilitator: new FacilitatorClient(relayer.url),
      notes: vault,
      network: { chainId, asset },
      acceptNotPrivate: true,
      onEvent: (event) => events.push(event),
      ...agentOptions,
    });
    return { agent, vault, vaultFile, seed, events, deposit: deposits[0]!, deposits, address: await wallet.getAddress() };
  };

  /**
   * A v2 seller of `price` whose x402 facilitator verifies payments but has no gas to settle them: it refuses after
   * the pool authorized the payment. The payer sweep brings it home after its window, with no role. Closing the seller
   * closes its facilitator.
   */
  const startBrokeSeller = async (sellerPrice = price): Promise<Seller> => {
    const broke = await startReferenceFacilitator({ rpcUrl: chain.rpc.url, chainId, privateKey: Wallet.createRandom().privateKey as `0x${string}` });
    const seller = await startSeller({
      facilitatorUrl: broke.url,
      asset,
      amountAtomic: sellerPrice.toString(),
      x402Version: 2,
      network: caip2NetworkOf(chainId),
      payTo: Wallet.createRandom().address,
    });
    return {
      ...seller,
      async close() {
        await seller.close();
        await broke.close();
      },
    };
  };

  /**
   * A v2 seller of `price` that offers payment by shielded proof (`offers`), whose facilitator is the reference
   * @x402/core facilitator with the shielded-proof plug-in (its own funded keys; fees to `feeRecipient`) or the
   * relayer's seller routes. Closing the seller closes its facilitator.
   */
  const startShieldedSeller = async (options: {
    facilitator: "reference" | "relayer";
    offers?: SellerOptions["offers"];
    minimumFee?: bigint;
    /** The reference facilitator's ETH price, atomic USDC: 2 USDC, as the relayer's in these tests, by default. */
    usdcPerEth?: bigint;
    /** The chain's JSON-RPC the reference facilitator reads and relays through (a proxy a test can cut); the chain's own by default. */
    rpcUrl?: string;
    /** The seller's served-payment record, reference secret and window (SellerOptions). */
    served?: SellerOptions["served"];
    referenceSecret?: SellerOptions["referenceSecret"];
    maxTimeoutSeconds?: number;
    /** The seller's payee (a second instance of one seller shares it); a fresh address by default. */
    payTo?: string;
    /** Where the reference facilitator's plug-in counts its payments. */
    metrics?: Registry;
    /** How long the reference facilitator's plug-in waits for a relay it sent (60 s by default). */
    inclusionTimeoutMs?: number;
    /** How long one request holds its payment, and how long the paid route's handler works (SellerOptions). */
    serveLeaseSeconds?: number;
    handlerDelayMs?: number;
  }) => {
    const keys = [Wallet.createRandom(), Wallet.createRandom()];
    for (const key of keys) await networkHelpers.setBalance(key.address, 10n ** 18n);
    const feeRecipient = Wallet.createRandom().address;
    const reference =
      options.facilitator === "reference"
        ? await startReferenceFacilitator({
            rpcUrl: options.rpcUrl ?? chain.rpc.url,
            chainId,
            privateKey: keys[0]!.privateKey as `0x${string}`,
            shielded: {
              privateKey: keys[1]!.privateKey,
              deployment: chain.facilitator.addressBook,
              minimumFee: options.minimumFee ?? 5_000n,
              usdcPerEth: options.usdcPerEth ?? 2_000_000n,
              feeRecipient,
              metrics: options.metrics,
              inclusionTimeoutMs: options.inclusionTimeoutMs,
            },
          })
        : undefined;
    const payTo = options.payTo ?? Wallet.createRandom().address;
    const seller = await startSeller({
      facilitatorUrl: reference?.url ?? `${relayer.url}/api/seller`,
      asset,
      amountAtomic: price.toString(),
      x402Version: 2,
      network: caip2NetworkOf(chainId),
      payTo,
      offers: options.offers ?? "shielded-proof",
      ...(options.served !== undefined && { served: options.served }),
      ...(options.referenceSecret !== undefined && { referenceSecret: options.referenceSecret }),
      ...(options.maxTimeoutSeconds !== undefined && { maxTimeoutSeconds: options.maxTimeoutSeconds }),
      ...(options.serveLeaseSeconds !== undefined && { serveLeaseSeconds: options.serveLeaseSeconds }),
      ...(options.handlerDelayMs !== undefined && { handlerDelayMs: options.handlerDelayMs }),
    });
    return {
      ...seller,
      payTo,
      /** Who relays the payments (and pays their gas), and where their fees accrue. */
      settler: reference === undefined ? relayerKey.address : keys[1]!.address,
      /** Who settles the plain (EIP-3009) payments. */
      eip3009Settler: reference === undefined ? relayerEip3009Key.address : reference.address,
      feeRecipient: reference === undefined ? treasury.address : feeRecipient,
      facilitatorUrl: reference?.url ?? `${relayer.url}/api/seller`,
      async close() {
        await seller.close();
        await reference?.close();
      },
    };
  };

  let batchPeer: Promise<BatchSettlementPeer> | undefined;
  /**
   * A seller of `price` a request on x402's batch-settlement scheme as @x402/evm ships it (a private tab's seller,
   * x402-peers/batch-settlement-seller.ts), its facilitator the reference one with @x402/evm's batch-settlement
   * scheme; x402's contracts are placed on the chain first, once. Closing the seller closes its facilitator.
   */
  const startTabSeller = async ({
    price: requestPrice,
    maxTimeoutSeconds = 60,
    rpcUrl = chain.rpc.url,
    storage,
    onchainStateTtlMs,
  }: {
    price: bigint;
    maxTimeoutSeconds?: number;
    /** The chain's JSON-RPC the seller's facilitator reads and settles through (a proxy a test can cut); the chain's own by default. */
    rpcUrl?: string;
    /** The seller's channel storage over its file storage in `directory` (a test's, to stop at a write); the file storage by default. */
    storage?: (directory: string) => ChannelStorage;
    /** How long the seller trusts its record of a channel (@x402/evm's default: a third of the withdraw delay, at most 5 minutes). */
    onchainStateTtlMs?: number;
  }) => {
    batchPeer ??= placeBatchSettlementPeer(chain.connection.ethers);
    const { settlement } = await batchPeer;
    const key = Wallet.createRandom();
    await networkHelpers.setBalance(key.address, 10n ** 18n);
    const facilitator = await startReferenceFacilitator({ rpcUrl, chainId, privateKey: key.privateKey as `0x${string}`, batchSettlement: true });
    const payTo = Wallet.createRandom().address as `0x${string}`;
    const storageDirectory = mkdtempSync(path.join(tmpdir(), "batch-seller-"));
    const options = {
      facilitatorUrl: facilitator.url,
      network: caip2NetworkOf(chainId),
      payTo,
      asset: asset as `0x${string}`,
      amountAtomic: requestPrice.toString(),
      receiverAuthorizerKey: Wallet.createRandom().privateKey as `0x${string}`,
      storageDirectory,
      maxTimeoutSeconds,
      ...(onchainStateTtlMs !== undefined && { onchainStateTtlMs }),
    };
    let seller = await startBatchSettlementSeller({ ...options, ...(storage !== undefined && { storage: storage(storageDirectory) }) });
    return {
      get resourceUrl() {
        return seller.resourceUrl;
      },
      get channels() {
        return seller.channels;
      },
      served: () => seller.served(),
      payTo,
      settlement,
      /** Stops the seller, dropping any request in flight; `restart` starts it again on the same port and file storage. */
      stop: () => seller.close(),
      async restart() {
        seller = await startBatchSettlementSeller({ ...options, port: Number(new URL(seller.url).port) });
      },
      async close() {
        await seller.close().catch(() => undefined);
        await facilitator.close();
      },
    };
  };

  const unspentNotes = async (vault: NoteVault): Promise<Note[]> =>
    (await vault.list()).filter((entry) => !entry.spent).map((entry) => entry.note);

  return {
    chain,
    indexer,
    relayer,
    x402Facilitator,
    sellers,
    plain402,
    provider,
    price,
    asset,
    chainId,
    /** Each seller's payTo address. */
    payTo,
    usdcBalance: (address: string) => usdc.balanceOf(address),
    /** What the pool holds for notes and for the prices it authorized sellers to take: its USDC less the takes it owes the treasury (PrivacyPool.accruedFeesOf). */
    poolBalance: async () => {
      const { privacyPool } = chain.facilitator;
      return (await usdc.balanceOf(await privacyPool.getAddress())) - (await privacyPool.accruedFeesOf(treasury.address));
    },
    /** What the pool owes a fee recipient (the relay fees accrue there until PrivacyPool.claimFees). */
    accruedFees: (address: string) => chain.facilitator.privacyPool.accruedFeesOf(address),
    syncIndexer,
    whileIndexerFollows,
    newAgent,
    startBrokeSeller,
    startShieldedSeller,
    startTabSeller,
    unspentNotes,
    async close() {
      provider.destroy();
      await Promise.all([sellers.v2.close(), sellers.v1.close(), plain402.close(), x402Facilitator.close()]);
      await relayer.stop();
      await indexer.stop();
      await chain.close();
    },
  };
}

export type PaymentWorld = Awaited<ReturnType<typeof startPaymentWorld>>;

export type { LocalChain, RunningIndexer, RunningRelayer, Seller };

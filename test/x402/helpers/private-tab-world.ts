// A private tab's world (docs/design.md 13): the local chain with our contracts and x402's batch-settlement peer, the
// reference facilitator with @x402/evm's batch-settlement facilitator scheme, two sellers on @x402/evm's server scheme,
// and tabs opened by a private agent: one relayed proof spends the note and deposits into the channel, whose payer is
// the note's TabPayer (a keyless clone of the entrypoint's); vouchers are signed by a key made for the tab, through
// @x402/evm's client, which finds the funded channel on chain.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme,
  buildChannelConfig,
  type ClientChannelStorage,
  computeChannelId,
  InMemoryClientChannelStorage,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { hexlify, randomBytes, Wallet } from "ethers";
import type { RequestHandler } from "express";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { readStateLeaves } from "../../../sdk/agent/pool-events.js";
import { createLeanIMT, namePublicSignals, nullifierHashOf, type TabRecord } from "../../../sdk/index.js";
import { caip2NetworkOf } from "../../../sdk/x402/networks.js";
import { placeBatchSettlementPeer } from "../../../x402-peers/batch-settlement.js";
import { startBatchSettlementSeller, type BatchSettlementSeller } from "../../../x402-peers/batch-settlement-seller.js";
import { startReferenceFacilitator } from "../../../x402-peers/reference-facilitator.js";
import { depositNote, secretsFor } from "../../contracts/helpers/notes.js";
import { proveTabOpening } from "../../contracts/helpers/withdrawals.js";
import { startLocalChain } from "../../indexer/helpers/local-chain.js";

const NOTE_VALUE = 1_000_000n;
/** A tab's lifetime: from then on anyone may take back what its seller left (Entrypoint.withdrawTab). */
export const TAB_LIFETIME_SECONDS = 86_400;
/** The sellers' maxTimeoutSeconds: how long one holds a channel for a request whose answer was lost. */
export const PENDING_SECONDS = 10;

/** Sends a hand-made payment to `url`, as a client that bypasses @x402/evm's scheme would. */
export const sendPayment = (payment: object, url: string) =>
  fetch(url, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(payment as never) } });

export type FetchPaid = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * Sends the agent's requests on one tab one at a time, in the order made: @x402/evm's server takes one request per
 * channel at a time (another is refused `channel_busy`), and each voucher builds on the total the last one left.
 */
export function inTurn(fetchPaid: FetchPaid): FetchPaid {
  let previous: Promise<unknown> = Promise.resolve();
  return (input, init) => {
    const response = previous.then(() => fetchPaid(input, init));
    previous = response.catch(() => undefined);
    return response;
  };
}

export async function startTabWorld({ price, wallClockBlocks = false }: { price: bigint; wallClockBlocks?: boolean }) {
  const chain = await startLocalChain({ wallClockBlocks });
  const { usdc, entrypoint, privacyPool, scope, accounts } = chain.facilitator;
  const { ethers, networkHelpers } = chain.connection;
  const chainId = Number((await ethers.provider.getNetwork()).chainId);
  const network = caip2NetworkOf(chainId) as `${string}:${string}`;
  const asset = (await usdc.getAddress()) as `0x${string}`;
  const { settlement } = await placeBatchSettlementPeer(ethers);

  const facilitatorKey = Wallet.createRandom();
  await networkHelpers.setBalance(facilitatorKey.address, 10n ** 18n);
  const facilitator = await startReferenceFacilitator({
    rpcUrl: chain.rpc.url,
    chainId,
    privateKey: facilitatorKey.privateKey as `0x${string}`,
    batchSettlement: true,
  });
  const sellerOptions = {
    facilitatorUrl: facilitator.url,
    network,
    payTo: Wallet.createRandom().address as `0x${string}`,
    asset,
    amountAtomic: price.toString(),
    receiverAuthorizerKey: Wallet.createRandom().privateKey as `0x${string}`,
    storageDirectory: mkdtempSync(path.join(tmpdir(), "batch-seller-")),
    // The seller holds a channel this long for a request that never got its answer.
    maxTimeoutSeconds: PENDING_SECONDS,
  };
  let seller: BatchSettlementSeller = await startBatchSettlementSeller(sellerOptions);
  const otherSeller = await startBatchSettlementSeller({
    ...sellerOptions,
    payTo: Wallet.createRandom().address as `0x${string}`,
    storageDirectory: mkdtempSync(path.join(tmpdir(), "batch-seller-")),
  });
  const publicClient = createPublicClient({ transport: http(chain.rpc.url) });
  let notes = 0n;
  /** The ASP's approved labels: every tab's note. */
  const labels: bigint[] = [];

  /** The seller's batch-settlement entry, from its unpaid 402. */
  async function sellerRequirements(): Promise<{ accepted: PaymentRequirements; resource: unknown }> {
    const response = await fetch(seller.resourceUrl);
    if (response.status !== 402) throw new Error(`the seller answered ${response.status} unpaid`);
    const required = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED") ?? "");
    const accepted = required.accepts.find((entry) => entry.scheme === "batch-settlement");
    if (accepted === undefined) throw new Error("the seller offers no batch-settlement entry");
    return { accepted, resource: required.resource };
  }

  /** A tab of `deposit` with the seller, opened by one relay, its first request paid with a voucher. */
  async function openTab({ deposit, storage = new InMemoryClientChannelStorage() as ClientChannelStorage }: { deposit: bigint; storage?: ClientChannelStorage }) {
    notes += 1n;
    const note = await depositNote(chain.facilitator, accounts.depositor, NOTE_VALUE, secretsFor(4100n + notes));
    labels.push(note.label);
    const aspTree = createLeanIMT(labels);
    await (await entrypoint.updateRoot(aspTree.root, aspTree.depth, "bafy-private-tab")).wait();
    const origin = nullifierHashOf(note.nullifier);
    const payer = await entrypoint.tabPayerOf(origin);
    const tabKey = Wallet.createRandom();
    // The payer is a contract: it signs nothing, and the client finds the channel funded on chain (publicClient).
    const payerSigner = toClientEvmSigner(
      { address: payer as `0x${string}`, signTypedData: () => Promise.reject(new Error("a tab's payer is a contract and signs nothing")) },
      publicClient,
    );
    const voucherSigner = toClientEvmSigner(privateKeyToAccount(tabKey.privateKey as `0x${string}`));
    const salt = hexlify(randomBytes(32)) as `0x${string}`;

    const { accepted, resource } = await sellerRequirements();
    const channelConfig = buildChannelConfig({ signer: payerSigner, voucherSigner, storage, salt }, accepted);
    const channelId = computeChannelId(channelConfig, network);
    const reclaimableAfter = BigInt((await networkHelpers.time.latest()) + TAB_LIFETIME_SECONDS);

    const poolBefore = await usdc.balanceOf(privacyPool);
    const relayed = await proveTabOpening({
      note,
      withdrawnValue: deposit,
      stateTree: createLeanIMT(await readStateLeaves(ethers.provider, { privacyPool: await privacyPool.getAddress(), startBlock: 0 })),
      aspTree,
      entrypoint: await entrypoint.getAddress(),
      scope,
      opening: { channel: channelConfig, reclaimableAfter, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n },
    });
    await (await entrypoint.relay(relayed.withdrawal, relayed.proof, scope, relayed.stateTreeSize)).wait();
    const [balance] = await settlement.channels(channelId);
    if (balance !== deposit || poolBefore - (await usdc.balanceOf(privacyPool)) !== deposit) {
      throw new Error("the relay did not move exactly the deposit from the pool into the channel");
    }

    /** The agent's side with @x402/evm's client scheme unchanged: vouchers only, never another deposit. */
    const fetchPaidWith = (tabStorage: ClientChannelStorage) => {
      const scheme = new BatchSettlementEvmScheme(payerSigner, { voucherSigner, storage: tabStorage, salt, depositStrategy: () => false });
      const client = x402Client.fromConfig({
        schemes: [{ network, client: scheme }],
        spendControls: { allowedAssets: [{ network, asset, maxAmountPerPayment: price.toString() }] },
      });
      return wrapFetchWithPayment(fetch, client);
    };
    /** A payment the agent signs by hand: a voucher for `maxClaimableAmount` of `config`'s channel. */
    const voucherPayment = async (maxClaimableAmount: bigint, config = channelConfig) => ({
      x402Version: 2,
      resource,
      accepted,
      payload: { type: "voucher", channelConfig: config, voucher: await signVoucher(voucherSigner, computeChannelId(config, network), maxClaimableAmount.toString(), network) },
    });
    /** The tab the pool recorded for the relay, as Entrypoint.withdrawTab and returnTab take it. */
    const record: TabRecord = { channel: channelConfig, deposit, reclaimableAfter, refundAnchor: namePublicSignals(relayed.proof.pubSignals).refundAnchor };
    const fetchPaid = fetchPaidWith(storage);
    const first = await fetchPaid(seller.resourceUrl);
    if (first.status !== 200) throw new Error(`the seller refused the tab's first voucher: ${first.status} ${await first.text()}`);
    return { note, origin, payer, tabKey, channelConfig, channelId, record, storage, fetchPaid, fetchPaidWith, voucherPayment };
  }

  return {
    chain,
    chainId,
    asset,
    settlement,
    payTo: sellerOptions.payTo,
    otherSeller,
    get seller() {
      return seller;
    },
    /**
     * Stops the seller, dropping any request in flight, and starts another on the same channel storage and keys;
     * `serve` replaces what its paid route does once paid.
     */
    async restartSeller(serve?: RequestHandler) {
      await seller.close();
      seller = await startBatchSettlementSeller({ ...sellerOptions, serve });
    },
    openTab,
    async close() {
      await Promise.all([seller.close(), otherSeller.close()]);
      await facilitator.close();
      await chain.close();
    },
  };
}

export type TabWorld = Awaited<ReturnType<typeof startTabWorld>>;
export type Tab = Awaited<ReturnType<TabWorld["openTab"]>>;

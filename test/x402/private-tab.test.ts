import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, toClientEvmSigner } from "@x402/evm";
import { FileClientChannelStorage } from "@x402/evm/batch-settlement/client/file-storage";
import {
  BatchSettlementEvmScheme,
  buildChannelConfig,
  type ClientChannelStorage,
  computeChannelId,
  InMemoryClientChannelStorage,
  processPaymentResponse,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { expect } from "chai";
import { AbiCoder, hexlify, keccak256, randomBytes, Wallet } from "ethers";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { payerWallet } from "../../relayer/x402/payer-keys.js";
import { readStateLeaves } from "../../sdk/agent/pool-events.js";
import { createLeanIMT, createNote, deriveRefundSecrets, namePublicSignals, nullifierHashOf } from "../../sdk/index.js";
import { eip3009Types } from "../../sdk/x402/eip712-domain.js";
import { caip2NetworkOf } from "../../sdk/x402/networks.js";
import { placeBatchSettlementPeer } from "../../x402-peers/batch-settlement.js";
import { startBatchSettlementSeller } from "../../x402-peers/batch-settlement-seller.js";
import { startReferenceFacilitator } from "../../x402-peers/reference-facilitator.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { depositNote, secretsFor } from "../contracts/helpers/notes.js";
import { proveRelayedWithdrawal } from "../contracts/helpers/withdrawals.js";
import { startLocalChain } from "../indexer/helpers/local-chain.js";

const PRICE = 1_000n;
const DEPOSIT = 100_000n;
const NOTE_VALUE = 1_000_000n;
const REQUESTS = 20;
const RECEIVE_WITH_AUTHORIZATION = eip3009Types("ReceiveWithAuthorization");

const chain = await startLocalChain();
const { usdc, entrypoint, privacyPool, scope, accounts } = chain.facilitator;
const { ethers, networkHelpers } = chain.connection;
const chainId = Number((await ethers.provider.getNetwork()).chainId);
const network = caip2NetworkOf(chainId);
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
const payTo = Wallet.createRandom().address as `0x${string}`;
const sellerOptions = {
  facilitatorUrl: facilitator.url,
  network,
  payTo,
  asset,
  amountAtomic: PRICE.toString(),
  receiverAuthorizerKey: Wallet.createRandom().privateKey as `0x${string}`,
  storageDirectory: mkdtempSync(path.join(tmpdir(), "batch-seller-")),
};
/** The seller; a test that restarts it starts another on the same channel storage. */
let seller = await startBatchSettlementSeller(sellerOptions);
const otherSeller = await startBatchSettlementSeller({
  ...sellerOptions,
  payTo: Wallet.createRandom().address as `0x${string}`,
  storageDirectory: mkdtempSync(path.join(tmpdir(), "batch-seller-")),
});
const publicClient = createPublicClient({ transport: http(chain.rpc.url) });

/** The seller's batch-settlement entry, from its unpaid 402. */
async function sellerRequirements(): Promise<{ accepted: PaymentRequirements; resource: unknown }> {
  const response = await fetch(seller.resourceUrl);
  expect(response.status).to.equal(402);
  const required = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED") ?? "");
  const accepted = required.accepts.find((entry) => entry.scheme === "batch-settlement");
  if (accepted === undefined) throw new Error("the seller offers no batch-settlement entry");
  return { accepted, resource: required.resource };
}

/**
 * A private agent's tab: its note pays the tab's deposit by one relayed proof to a single-use payer (the relayer's
 * payer of that nullifier hash, docs/design.md 6), whose one EIP-3009 authorization, fixed before the proof, funds
 * the channel; the vouchers are signed by a key made for the tab.
 */
let notes = 0n;
/** The ASP's approved labels: every tab's note. */
const labels: bigint[] = [];

async function openTab({ deposit = DEPOSIT, storage = new InMemoryClientChannelStorage() as ClientChannelStorage } = {}) {
  notes += 1n;
  const note = await depositNote(chain.facilitator, accounts.depositor, NOTE_VALUE, secretsFor(4100n + notes));
  labels.push(note.label);
  const aspTree = createLeanIMT(labels);
  await (await entrypoint.updateRoot(aspTree.root, aspTree.depth, "bafy-private-tab")).wait();
  const payer = payerWallet(hexlify(randomBytes(32)), nullifierHashOf(note.nullifier));
  const tabKey = Wallet.createRandom();
  const payerSigner = toClientEvmSigner(
    {
      address: payer.address as `0x${string}`,
      signTypedData: () => Promise.reject(new Error("the single-use payer signs only the deposit, which the relayer signs")),
    },
    publicClient,
  );
  const voucherSigner = toClientEvmSigner(privateKeyToAccount(tabKey.privateKey as `0x${string}`));
  const salt = hexlify(randomBytes(32)) as `0x${string}`;
  const deps = { signer: payerSigner, voucherSigner, storage, salt };

  const { accepted, resource } = await sellerRequirements();
  const channelConfig = buildChannelConfig(deps, accepted);
  const channelId = computeChannelId(channelConfig, network);
  const depositSalt = hexlify(randomBytes(32));
  const depositNonce = keccak256(AbiCoder.defaultAbiCoder().encode(["bytes32", "uint256"], [channelId, BigInt(depositSalt)]));
  // Valid for the facilitator's clock and the chain's, which a test's time jumps put ahead.
  const validBefore = BigInt(Math.max(Math.floor(Date.now() / 1000), await networkHelpers.time.latest()) + 600);

  const poolBefore = await usdc.balanceOf(privacyPool);
  const relayed = await proveRelayedWithdrawal({
    note,
    withdrawnValue: deposit,
    stateTree: createLeanIMT(await readStateLeaves(ethers.provider, { privacyPool: await privacyPool.getAddress(), startBlock: 0 })),
    aspTree,
    entrypoint: await entrypoint.getAddress(),
    scope,
    relayData: { recipient: payer.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n, payment: { nonce: depositNonce, validBefore } },
  });
  await (await entrypoint.relay(relayed.withdrawal, relayed.proof, scope, relayed.stateTreeSize)).wait();
  expect(await usdc.balanceOf(payer.address)).to.equal(deposit);
  expect(poolBefore - (await usdc.balanceOf(privacyPool))).to.equal(deposit);

  // The relayer's part: the payer's authorization of exactly the payout to the deposit collector, for this channel.
  const { name, version } = accepted.extra as { name: string; version: string };
  const authorization = await payer.signTypedData(
    { name, version, chainId, verifyingContract: asset },
    RECEIVE_WITH_AUTHORIZATION,
    { from: payer.address, to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS, value: deposit, validAfter: 0n, validBefore, nonce: depositNonce },
  );
  const depositPayment = {
    x402Version: 2,
    resource,
    accepted,
    payload: {
      type: "deposit",
      channelConfig,
      voucher: await signVoucher(voucherSigner, channelId, PRICE.toString(), network),
      deposit: {
        amount: deposit.toString(),
        authorization: { erc3009Authorization: { validAfter: "0", validBefore: validBefore.toString(), salt: depositSalt, signature: authorization } },
      },
    },
  };
  const first = await sendPayment(depositPayment);
  expect(first.status, await first.clone().text()).to.equal(200);
  await processPaymentResponse(storage, (header) => first.headers.get(header), { channelId, requestAmount: PRICE.toString(), depositAmount: deposit.toString() });

  /** The agent's side with @x402/evm's client scheme unchanged: vouchers only, never another deposit. */
  const fetchPaidWith = (tabStorage: ClientChannelStorage) => {
    const scheme = new BatchSettlementEvmScheme(payerSigner, { voucherSigner, storage: tabStorage, salt, depositStrategy: () => false });
    const client = x402Client.fromConfig({
      schemes: [{ network: network as `${string}:${string}`, client: scheme }],
      spendControls: { allowedAssets: [{ network: network as `${string}:${string}`, asset, maxAmountPerPayment: PRICE.toString() }] },
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
  /** The payment the pool recorded for the relay, as Entrypoint's refunds take it. */
  const record = { payer: payer.address, amount: deposit, nonce: depositNonce, validBefore, refundCommitment: namePublicSignals(relayed.proof.pubSignals).refundCommitment };
  return { note, payer, tabKey, channelConfig, channelId, depositSalt, record, storage, fetchPaid: fetchPaidWith(storage), fetchPaidWith, voucherPayment };
}

/** Sends a hand-made payment to the seller, as a client that bypasses @x402/evm's scheme would. */
const sendPayment = (payment: object, url = seller.resourceUrl) =>
  fetch(url, { headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(payment as never) } });

/** Pays `count` requests on the tab one after another, each answered 200 with the report. */
async function payRequests(fetchPaid: typeof fetch, count: number) {
  for (let i = 0; i < count; i++) {
    const response = await fetchPaid(seller.resourceUrl);
    expect(response.status, await response.clone().text()).to.equal(200);
    expect(await response.json()).to.deep.equal(WEATHER_REPORT);
  }
}

describe("a private tab on x402's batch-settlement, with @x402/evm's seller and facilitator unchanged", function () {
  after(async function () {
    await Promise.all([seller.close(), otherSeller.close()]);
    await facilitator.close();
    await chain.close();
  });

  it("pays many requests out of one proof, each a voucher and no transaction; the seller is paid what it served, the rest goes back to the payer", async function () {
    const servedBefore = seller.served();
    const tab = await openTab();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 0n]);
    expect(await usdc.balanceOf(BATCH_SETTLEMENT_ADDRESS)).to.equal(DEPOSIT);

    const blockBefore = await ethers.provider.getBlockNumber();
    await payRequests(tab.fetchPaid, REQUESTS - 1);
    expect(await ethers.provider.getBlockNumber()).to.equal(blockBefore);
    expect(seller.served() - servedBefore).to.equal(REQUESTS);

    await seller.channels.claimAndSettle();
    expect(await usdc.balanceOf(payTo)).to.equal(BigInt(REQUESTS) * PRICE);
    await seller.channels.refund([tab.channelId]);
    expect(await usdc.balanceOf(tab.payer.address)).to.equal(DEPOSIT - BigInt(REQUESTS) * PRICE);
    expect(await usdc.balanceOf(BATCH_SETTLEMENT_ADDRESS)).to.equal(0n);
  });

  it("serves a replayed voucher once", async function () {
    const tab = await openTab();
    const payment = await tab.voucherPayment(2n * PRICE);
    const served = seller.served();
    expect((await sendPayment(payment)).status).to.equal(200);
    expect((await sendPayment(payment)).status).to.equal(402);
    expect(seller.served() - served).to.equal(1);
    await seller.channels.claim();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 2n * PRICE]);
  });

  it("serves one request for one total: the agent's second voucher for the same total, sent at once or after, is refused", async function () {
    const tab = await openTab();
    const served = seller.served();
    const together = await Promise.all([sendPayment(await tab.voucherPayment(2n * PRICE)), sendPayment(await tab.voucherPayment(2n * PRICE))]);
    expect(together.map((response) => response.status).sort()).to.deep.equal([200, 402]);
    expect((await sendPayment(await tab.voucherPayment(2n * PRICE))).status).to.equal(402);
    expect(seller.served() - served).to.equal(1);
    await seller.channels.claim();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 2n * PRICE]);
  });

  it("refuses a voucher beyond the tab's deposit", async function () {
    const tab = await openTab({ deposit: 3n * PRICE });
    await payRequests(tab.fetchPaid, 2);
    const served = seller.served();
    expect((await tab.fetchPaid(seller.resourceUrl)).status).to.equal(402);
    expect((await sendPayment(await tab.voucherPayment(4n * PRICE))).status).to.equal(402);
    expect(seller.served()).to.equal(served);
    await seller.channels.claim();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([3n * PRICE, 3n * PRICE]);
  });

  it("refuses a voucher moved to another seller or to another tab", async function () {
    const tab = await openTab();
    const otherTab = await openTab();
    const payment = await tab.voucherPayment(2n * PRICE);
    expect((await sendPayment(payment, otherSeller.resourceUrl)).status).to.equal(402);
    const movedToOtherTab = { ...payment, payload: { ...payment.payload, channelConfig: otherTab.channelConfig } };
    expect((await sendPayment(movedToOtherTab)).status).to.equal(402);
    expect(otherSeller.served()).to.equal(0);
    expect((await sendPayment(payment)).status).to.equal(200);
  });

  it("pays a seller that claims twice, or after the refund, once", async function () {
    const tab = await openTab();
    await payRequests(tab.fetchPaid, 3);
    await seller.channels.claimAndSettle();
    const paid = await usdc.balanceOf(payTo);
    await seller.channels.claimAndSettle();
    await seller.channels.refund([tab.channelId]);
    await seller.channels.claimAndSettle();
    expect(await usdc.balanceOf(payTo)).to.equal(paid);
    expect(await settlement.channels(tab.channelId)).to.deep.equal([4n * PRICE, 4n * PRICE]);
    expect(await usdc.balanceOf(tab.payer.address)).to.equal(DEPOSIT - 4n * PRICE);
  });

  it("loses no voucher and serves none twice when the seller restarts between requests", async function () {
    const tab = await openTab();
    await payRequests(tab.fetchPaid, 2);
    await seller.close();
    seller = await startBatchSettlementSeller(sellerOptions);
    await payRequests(tab.fetchPaid, 2);
    await seller.channels.claim();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 5n * PRICE]);
  });

  it("goes on after the agent restarts with its tab in @x402/evm's file storage, and after an answer the agent never recorded", async function () {
    const directory = mkdtempSync(path.join(tmpdir(), "tab-agent-"));
    const tab = await openTab({ storage: new FileClientChannelStorage({ directory }) });
    await payRequests(tab.fetchPaidWith(new FileClientChannelStorage({ directory })), 2);

    // A crash between a voucher and its answer: the seller served and counted it, the agent's record never saw it.
    const key = tab.channelId.toLowerCase();
    const before = await tab.storage.get(key);
    await payRequests(tab.fetchPaid, 1);
    await tab.storage.set(key, before!);
    const served = seller.served();
    await payRequests(tab.fetchPaid, 1);
    // Its record lost altogether: read back from the chain and the seller's last voucher, which it checks is its own.
    await payRequests(tab.fetchPaidWith(new InMemoryClientChannelStorage()), 1);
    expect(seller.served() - served).to.equal(2);
    await seller.channels.claim();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 6n * PRICE]);
  });

  // Last: the chain's clock moves past the withdraw delay, and the seller's unclaimed vouchers of this tab stay unclaimable.
  it("returns a tab the seller never claims into the pool as the agent's note after the withdraw delay, by the tab's own key", async function () {
    const tab = await openTab();
    await payRequests(tab.fetchPaid, 2);
    const tabKey = tab.tabKey.connect(ethers.provider);
    await networkHelpers.setBalance(tabKey.address, 10n ** 17n);
    await (await settlement.connect(tabKey).initiateWithdraw(tab.channelConfig, DEPOSIT)).wait();
    await networkHelpers.time.increase(tab.channelConfig.withdrawDelay);
    await (await settlement.connect(tabKey).finalizeWithdraw(tab.channelConfig)).wait();
    expect(await usdc.balanceOf(tab.payer.address)).to.equal(DEPOSIT);
    expect(await settlement.channels(tab.channelId)).to.deep.equal([0n, 0n]);

    // The refunder (the relayer's key) returns it with the payer's authorization, as its sweep returns an unused payment.
    const now = await networkHelpers.time.latest();
    const authorization = { from: tab.payer.address, to: await entrypoint.getAddress(), value: DEPOSIT, validAfter: 0n, validBefore: BigInt(now + 3600), nonce: hexlify(randomBytes(32)) };
    const signature = await tab.payer.signTypedData({ name: "USDC", version: "2", chainId, verifyingContract: asset }, RECEIVE_WITH_AUTHORIZATION, authorization);
    const poolBefore = await usdc.balanceOf(privacyPool);
    const originNullifierHash = nullifierHashOf(tab.note.nullifier);
    await expect(entrypoint.depositTabRefund(usdc, originNullifierHash, tab.record, tab.channelId, BigInt(tab.depositSalt), { ...authorization, signature }))
      .to.emit(entrypoint, "RefundDeposited")
      .withArgs(tab.payer.address, createNote(DEPOSIT, tab.note.label, deriveRefundSecrets(tab.note)).commitment, originNullifierHash, DEPOSIT);
    expect((await usdc.balanceOf(privacyPool)) - poolBefore).to.equal(DEPOSIT);
    expect(await usdc.balanceOf(tab.payer.address)).to.equal(0n);
  });
});

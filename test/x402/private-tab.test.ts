import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import { FileClientChannelStorage } from "@x402/evm/batch-settlement/client/file-storage";
import { InMemoryClientChannelStorage } from "@x402/evm/batch-settlement/client";
import { expect } from "chai";
import { Wallet } from "ethers";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createNote, deriveRefundSecrets } from "../../sdk/index.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { inTurn, PENDING_SECONDS, sendPayment as sendPaymentTo, startTabWorld } from "./helpers/private-tab-world.js";

const PRICE = 1_000n;
const DEPOSIT = 100_000n;
const REQUESTS = 20;

const world = await startTabWorld({ price: PRICE });
const { chain, settlement, payTo, otherSeller } = world;
const { usdc, entrypoint, privacyPool } = chain.facilitator;
const { ethers, networkHelpers } = chain.connection;
const openTab = ({ deposit = DEPOSIT, storage }: Partial<Parameters<typeof world.openTab>[0]> = {}) => world.openTab({ deposit, storage });
const sendPayment = (payment: object, url = world.seller.resourceUrl) => sendPaymentTo(payment, url);

/** Pays `count` requests on the tab one after another, each answered 200 with the report. */
async function payRequests(fetchPaid: typeof fetch, count: number) {
  for (let i = 0; i < count; i++) {
    const response = await fetchPaid(world.seller.resourceUrl);
    expect(response.status, await response.clone().text()).to.equal(200);
    expect(await response.json()).to.deep.equal(WEATHER_REPORT);
  }
}

type Tab = Awaited<ReturnType<typeof openTab>>;

/**
 * A stranger returns `value`, what the drained channel gave back to the tab's payer, into the pool as the agent's
 * refund note (Entrypoint.returnTab, as the sweep does, with no role and no key of anyone's). The event must name the
 * agent's refund note of that value.
 */
async function returnToPool(tab: Tab, value: bigint) {
  const stranger = Wallet.createRandom().connect(ethers.provider);
  await networkHelpers.setBalance(stranger.address, 10n ** 17n);
  const poolBefore = await usdc.balanceOf(privacyPool);
  await expect(entrypoint.connect(stranger).returnTab(usdc, tab.origin, tab.record))
    .to.emit(entrypoint, "RefundDeposited")
    .withArgs(tab.payer, createNote(value, tab.note.label, deriveRefundSecrets(tab.note), "refund").commitment, tab.origin, value);
  expect((await usdc.balanceOf(privacyPool)) - poolBefore).to.equal(value);
  expect(await usdc.balanceOf(tab.payer)).to.equal(0n);
}

/** Sends the request again while the seller answers 402 because it still holds the channel, for up to twice its hold. */
async function retryWhileBusy(send: () => Promise<Response>): Promise<Response> {
  const deadline = Date.now() + 2 * PENDING_SECONDS * 1000;
  for (;;) {
    const response = await send();
    if (response.status !== 402 || Date.now() > deadline) return response;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe("a private tab on x402's batch-settlement, with @x402/evm's seller and facilitator unchanged", function () {
  after(async function () {
    await world.close();
  });

  it("pays many requests out of one proof, each a voucher and no transaction; the seller is paid what it served, the rest goes back into the pool as the agent's note", async function () {
    const servedBefore = world.seller.served();
    const tab = await openTab();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 0n]);
    expect(await usdc.balanceOf(BATCH_SETTLEMENT_ADDRESS)).to.equal(DEPOSIT);

    const blockBefore = await ethers.provider.getBlockNumber();
    await payRequests(tab.fetchPaid, REQUESTS - 1);
    expect(await ethers.provider.getBlockNumber()).to.equal(blockBefore);
    expect(world.seller.served() - servedBefore).to.equal(REQUESTS);

    await world.seller.channels.claimAndSettle();
    expect(await usdc.balanceOf(payTo)).to.equal(BigInt(REQUESTS) * PRICE);
    await world.seller.channels.refund([tab.channelId]);
    expect(await usdc.balanceOf(tab.payer)).to.equal(DEPOSIT - BigInt(REQUESTS) * PRICE);
    expect(await usdc.balanceOf(BATCH_SETTLEMENT_ADDRESS)).to.equal(0n);
    await returnToPool(tab, DEPOSIT - BigInt(REQUESTS) * PRICE);
  });

  it("serves a burst of concurrent requests on one tab, each paid once, when the agent sends them in turn", async function () {
    const tab = await openTab();
    const served = world.seller.served();
    const fetchInTurn = inTurn(tab.fetchPaid);
    const responses = await Promise.all(Array.from({ length: 8 }, () => fetchInTurn(world.seller.resourceUrl)));
    expect(responses.map((response) => response.status)).to.deep.equal(Array(8).fill(200));
    expect(world.seller.served() - served).to.equal(8);
    await world.seller.channels.claim();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 9n * PRICE]);
  });

  it("serves a replayed voucher once", async function () {
    const tab = await openTab();
    const payment = await tab.voucherPayment(2n * PRICE);
    const served = world.seller.served();
    expect((await sendPayment(payment)).status).to.equal(200);
    expect((await sendPayment(payment)).status).to.equal(402);
    expect(world.seller.served() - served).to.equal(1);
    await world.seller.channels.claim();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 2n * PRICE]);
  });

  it("serves one request for one total: the agent's second voucher for the same total, sent at once or after, is refused", async function () {
    const tab = await openTab();
    const served = world.seller.served();
    const together = await Promise.all([sendPayment(await tab.voucherPayment(2n * PRICE)), sendPayment(await tab.voucherPayment(2n * PRICE))]);
    expect(together.map((response) => response.status).sort()).to.deep.equal([200, 402]);
    expect((await sendPayment(await tab.voucherPayment(2n * PRICE))).status).to.equal(402);
    expect(world.seller.served() - served).to.equal(1);
    await world.seller.channels.claim();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 2n * PRICE]);
  });

  it("refuses a voucher beyond the tab's deposit", async function () {
    const tab = await openTab({ deposit: 3n * PRICE });
    await payRequests(tab.fetchPaid, 2);
    const served = world.seller.served();
    expect((await tab.fetchPaid(world.seller.resourceUrl)).status).to.equal(402);
    expect((await sendPayment(await tab.voucherPayment(4n * PRICE))).status).to.equal(402);
    expect(world.seller.served()).to.equal(served);
    await world.seller.channels.claim();
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
    await world.seller.channels.claimAndSettle();
    const paid = await usdc.balanceOf(payTo);
    await world.seller.channels.claimAndSettle();
    await world.seller.channels.refund([tab.channelId]);
    await world.seller.channels.claimAndSettle();
    expect(await usdc.balanceOf(payTo)).to.equal(paid);
    expect(await settlement.channels(tab.channelId)).to.deep.equal([4n * PRICE, 4n * PRICE]);
    expect(await usdc.balanceOf(tab.payer)).to.equal(DEPOSIT - 4n * PRICE);
  });

  it("loses no voucher and serves none twice when the seller restarts between requests", async function () {
    const tab = await openTab();
    await payRequests(tab.fetchPaid, 2);
    await world.restartSeller();
    await payRequests(tab.fetchPaid, 2);
    await world.seller.channels.claim();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 5n * PRICE]);
  });

  it("loses no voucher and serves none twice when the seller dies between a voucher and its answer", async function () {
    const tab = await openTab();
    await payRequests(tab.fetchPaid, 2);
    let reached!: () => void;
    const inHandler = new Promise<void>((resolve) => (reached = resolve));
    await world.restartSeller(() => reached());
    const lost = tab.fetchPaid(world.seller.resourceUrl);
    await inHandler;
    await world.restartSeller();
    expect(await lost.then(() => "answered", () => "dropped")).to.equal("dropped");

    // The seller holds the channel for the lost request until its timeout, then takes the agent's same voucher again.
    const retried = await retryWhileBusy(() => tab.fetchPaid(world.seller.resourceUrl));
    expect(retried.status).to.equal(200);
    expect(world.seller.served()).to.equal(1);
    await world.seller.channels.claim();
    expect(await settlement.channels(tab.channelId)).to.deep.equal([DEPOSIT, 4n * PRICE]);
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
    const served = world.seller.served();
    await payRequests(tab.fetchPaid, 1);
    // Its record lost altogether: read back from the chain and the seller's last voucher, which it checks is its own.
    await payRequests(tab.fetchPaidWith(new InMemoryClientChannelStorage()), 1);
    expect(world.seller.served() - served).to.equal(2);
    await world.seller.channels.claim();
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
    expect(await usdc.balanceOf(tab.payer)).to.equal(DEPOSIT);
    expect(await settlement.channels(tab.channelId)).to.deep.equal([0n, 0n]);
    await returnToPool(tab, DEPOSIT);
  });
});

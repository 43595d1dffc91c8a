import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { expect } from "chai";
import { Wallet, type Signer } from "ethers";
import { tabRecordOf } from "../../relayer/settlement/payment-record.js";
import { expiredPayersWaiting, sweepExpiredPayers } from "../../relayer/x402/payer-sweep.js";
import { tabSellerOf } from "../../sdk/agent/index.js";
import { createNote, deriveRefundSecrets, nullifierHashOf } from "../../sdk/index.js";
import type { BatchSettlementRequirement } from "../../sdk/x402/batch-settlement.js";
import { relayerKey, treasury } from "../relayer/helpers/relayer-harness.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";

const PRICE = 1_000n;
const DEPOSIT = 100_000n;

type TabSellerWorld = ReturnType<typeof tabSellerWorld>;

/** An agent opens a tab on the world's seller, pays three requests on it, and is gone: the tab and its origin deposit. */
async function abandonedTab({ world, seller }: TabSellerWorld, depositor: Signer) {
  const tabs = { channelDirectory: mkdtempSync(path.join(tmpdir(), "agent-tabs-")), depositAtomic: DEPOSIT };
  const { agent, vault, deposit } = await world.newAgent(depositor, 1_000_000n, { custody: "non-custodial", tabs });
  for (let i = 0; i < 3; i++) expect((await agent.fetch(seller.resourceUrl)).status).to.equal(200);
  const required = decodePaymentRequiredHeader((await fetch(seller.resourceUrl)).headers.get("PAYMENT-REQUIRED") ?? "");
  const accepted = required.accepts.find((entry) => entry.scheme === "batch-settlement") as unknown as BatchSettlementRequirement;
  const { opened } = (await vault.tab(tabSellerOf(accepted)))!;
  await vault.close();
  return { opened: opened!, deposit };
}

/** One round of the relayer's payer sweep, as its schedule runs it: what it recorded of `payer`, having failed nowhere. */
function sweepOf(world: PaymentWorld, payer: string) {
  const { store, chain } = world.relayer.relayer;
  return async () => {
    const { records, failures } = await sweepExpiredPayers({ store, chain });
    expect(failures).to.deep.equal([]);
    return records.filter((record) => record.payer === payer);
  };
}

/** The channel's config as its ChannelCreated event names it: what a call on the channel takes. */
async function channelConfigOf({ seller }: TabSellerWorld, channelId: string) {
  const created = (await seller.settlement.queryFilter(seller.settlement.filters.ChannelCreated(channelId)))[0]!.args.config;
  const { payer, payerAuthorizer, receiver, receiverAuthorizer, token, withdrawDelay, salt } = created;
  return { payer, payerAuthorizer, receiver, receiverAuthorizer, token, withdrawDelay, salt };
}

/**
 * A fresh payment world with a tab seller of PRICE, started before the tests of the describe that calls it (each
 * moves the chain's clock its own way) and closed after them.
 */
function tabSellerWorld(): { world: PaymentWorld; seller: Awaited<ReturnType<PaymentWorld["startTabSeller"]>> } {
  const started = {} as ReturnType<typeof tabSellerWorld>;
  before(async function () {
    started.world = await startPaymentWorld();
    started.seller = await started.world.startTabSeller({ price: PRICE });
  });
  after(async function () {
    await started.seller?.close();
    await started.world?.close();
  });
  return started;
}

describe("the payer sweep takes back a private tab nobody drains (relayer/x402/tab-withdrawal.ts)", function () {
  const started = tabSellerWorld();

  it("with no action by the agent and no role or key of the operator's: after the tab's lifetime anyone's withdrawTab starts the timed withdrawal, the seller claims its vouchers meanwhile, the rest comes back as the agent's note", async function () {
    const { world, seller } = started;
    const { entrypoint: pool, usdc, privacyPool } = world.chain.facilitator;
    const { time } = world.chain.connection.networkHelpers;

    // The agent opens a tab, pays three requests on it, and is gone; the seller neither claims nor refunds.
    const { opened, deposit } = await abandonedTab(started, world.chain.depositors.alice);
    const { payer, channelId } = opened;
    const sweep = sweepOf(world, payer);
    const { store, chain } = world.relayer.relayer;
    const pending = () => seller.settlement.pendingWithdrawals(channelId);

    // Until the tab's lifetime ends (the reclaimableAfter its proof bound) the sweep leaves it alone: the agent may still pay on it.
    for (const role of [await pool.DEFAULT_ADMIN_ROLE(), await pool.POSTMAN_ROLE()]) expect(await pool.hasRole(role, relayerKey.address), "the relaying key holds no role").to.equal(false);
    await time.increaseTo(opened.reclaimableAfter - 60);
    expect(await sweep()).to.deep.equal([]);
    expect((await pending())[1]).to.equal(0n);
    expect(await expiredPayersWaiting({ store, chain })).to.equal(0);

    // Then the sweep has the tab's payer start the withdrawal of all that is unclaimed (Entrypoint.withdrawTab).
    await time.increaseTo(opened.reclaimableAfter);
    expect(await expiredPayersWaiting({ store, chain })).to.equal(1);
    expect(await sweep()).to.deep.equal([]);
    const [amount, initiatedAt] = await pending();
    expect(amount).to.equal(DEPOSIT);
    expect(initiatedAt).to.be.greaterThan(0n);
    expect(await sweep()).to.deep.equal([]);
    // While the withdrawal waits out the channel's delay, nothing waits on the sweep.
    expect(await expiredPayersWaiting({ store, chain })).to.equal(0);

    // The seller still claims the vouchers it holds during the delay.
    const ofTab = (each: { channelId: string }) => each.channelId.toLowerCase() === channelId.toLowerCase();
    await seller.channels.claimAndSettle({ selectClaimChannels: (channels) => channels.filter(ofTab) });
    expect(await seller.settlement.channels(channelId)).to.deep.equal([DEPOSIT, 3n * PRICE]);
    expect(await world.usdcBalance(seller.payTo)).to.equal(3n * PRICE);

    // After the delay the sweep finalizes it and, in the same round, returns what came back as the agent's note.
    const withdrawDelay = Number((await channelConfigOf(started, channelId)).withdrawDelay);
    await time.increase(withdrawDelay);
    expect(await expiredPayersWaiting({ store, chain })).to.equal(1);
    const poolBefore = await usdc.balanceOf(privacyPool);
    const rest = DEPOSIT - 3n * PRICE;
    expect((await sweep()).map(({ outcome, amount }) => ({ outcome, amount }))).to.deep.equal([{ outcome: "deposited", amount: rest }]);
    expect(await seller.settlement.channels(channelId)).to.deep.equal([3n * PRICE, 3n * PRICE]);
    expect((await usdc.balanceOf(privacyPool)) - poolBefore).to.equal(rest);
    expect(await world.usdcBalance(payer)).to.equal(0n);
    const [refunded] = await pool.queryFilter(pool.filters.RefundDeposited(payer));
    expect([refunded!.args.commitment, refunded!.args.value]).to.deep.equal([createNote(rest, deposit.note.label, deriveRefundSecrets(deposit.note), "refund").commitment, rest]);
    expect(await sweep()).to.deep.equal([]);
  });
});

/** docs/design.md 9, the tab's row, played by the operator: every key, secret and row the relayer has, and every role of the entrypoint. */
describe("what the operator can move of a live private tab", function () {
  const started = tabSellerWorld();

  it("nothing of its unclaimed money, to anyone: not by the channel, the tab's payer or the entrypoint; after the tab's lifetime, only into the pool as the agent's note (docs/design.md 9)", async function () {
    const { world, seller } = started;
    const { entrypoint: pool, usdc, privacyPool } = world.chain.facilitator;
    const { ethers, networkHelpers } = world.chain.connection;
    const tabs = { channelDirectory: mkdtempSync(path.join(tmpdir(), "agent-tabs-")), depositAtomic: DEPOSIT };
    const { agent, vault, deposit } = await world.newAgent(world.chain.depositors.bob, 1_000_000n, { custody: "non-custodial", tabs });
    expect((await agent.fetch(seller.resourceUrl)).status).to.equal(200);
    const required = decodePaymentRequiredHeader((await fetch(seller.resourceUrl)).headers.get("PAYMENT-REQUIRED") ?? "");
    const accepted = required.accepts.find((entry) => entry.scheme === "batch-settlement") as unknown as BatchSettlementRequirement;
    const { payer, channelId, reclaimableAfter } = (await vault.tab(tabSellerOf(accepted)))!.opened!;
    const origin = nullifierHashOf(deposit.note.nullifier);

    // The operator: the relaying key, the treasury key, the deployer (admin and postman), and the lease's row.
    const [admin] = await ethers.getSigners();
    const operatorKeys = [relayerKey.connect(ethers.provider), treasury.connect(ethers.provider), admin!];
    for (const key of operatorKeys) await networkHelpers.setBalance(await key.getAddress(), 10n ** 18n);
    const lease = (await world.relayer.relayer.store.getLease(origin))!;
    const record = tabRecordOf(lease)!;
    expect(record.channel.payer).to.equal(payer);
    const config = await channelConfigOf(started, channelId);
    const [balance, claimed] = await seller.settlement.channels(channelId);
    const thief = Wallet.createRandom().address;

    for (const key of operatorKeys) {
      const asOperator = seller.settlement.connect(key);
      await expect(asOperator.initiateWithdraw(config, balance - claimed)).to.be.revertedWithCustomError(seller.settlement, "NotPayerSide");
      await expect(pool.connect(key).withdrawTab(usdc, origin, record)).to.be.revertedWithCustomError(pool, "TabStillOpen");
      await expect(pool.connect(key).returnTab(usdc, origin, record)).to.be.revertedWithCustomError(pool, "TabRestNotReturned");
      await expect(pool.connect(key).collect(payer, usdc, balance - claimed, channelId, "0x")).to.be.revertedWithCustomError(pool, "NotDepositing");
      // The tab's payer has no code yet, and once deployed it answers only to the entrypoint (test/contracts/pool-tab.test.ts).
      await (await usdc.connect(key).transfer(thief, 0n)).wait();
    }
    expect(await seller.settlement.channels(channelId)).to.deep.equal([balance, claimed]);
    expect(await world.usdcBalance(thief)).to.equal(0n);

    // After the tab's lifetime the operator can only do what anyone can: take the tab back into the pool as the agent's note.
    await networkHelpers.time.increaseTo(reclaimableAfter);
    await (await pool.connect(relayerKey.connect(ethers.provider)).withdrawTab(usdc, origin, record)).wait();
    await networkHelpers.time.increase(Number(config.withdrawDelay));
    await (await pool.connect(relayerKey.connect(ethers.provider)).withdrawTab(usdc, origin, record)).wait();
    const rest = balance - claimed;
    await expect(pool.connect(relayerKey.connect(ethers.provider)).returnTab(usdc, origin, record))
      .to.emit(pool, "RefundDeposited")
      .withArgs(payer, createNote(rest, deposit.note.label, deriveRefundSecrets(deposit.note), "refund").commitment, origin, rest);
    expect(await usdc.balanceOf(privacyPool)).to.be.greaterThanOrEqual(rest);
    await vault.close();
  });
});

/** A stranger who funds a tab's channel with dust: x402's contract takes a deposit from anyone, through any collector. */
describe("a stranger's dust in an abandoned private tab's channel", function () {
  const started = tabSellerWorld();

  it("delays the agent's refund by at most one withdraw delay: a unit deposited into the channel during each delay neither holds back the rest nor enters the pool", async function () {
    const { world, seller } = started;
    const { entrypoint: pool, usdc, privacyPool } = world.chain.facilitator;
    const { time, setBalance } = world.chain.connection.networkHelpers;
    const { opened } = await abandonedTab(started, world.chain.depositors.carol);
    const { payer, channelId } = opened;
    const sweep = sweepOf(world, payer);
    const config = await channelConfigOf(started, channelId);
    const withdrawDelay = Number(config.withdrawDelay);
    // The seller claims its three vouchers; then nobody but the stranger touches the tab.
    const ofTab = (each: { channelId: string }) => each.channelId.toLowerCase() === channelId.toLowerCase();
    await seller.channels.claimAndSettle({ selectClaimChannels: (channels) => channels.filter(ofTab) });

    const stranger = Wallet.createRandom().connect(world.chain.connection.ethers.provider);
    await setBalance(stranger.address, 10n ** 18n);
    const gift = await world.chain.connection.ethers.deployContract("GiftDepositCollector");
    await (await usdc.mint(gift, 100n)).wait();
    const dust = () => seller.settlement.connect(stranger).deposit(config, 1n, gift, "0x").then((sent) => sent.wait());

    await dust();
    await time.increaseTo(opened.reclaimableAfter);
    expect(await sweep()).to.deep.equal([]);
    const [, initiatedAt] = await seller.settlement.pendingWithdrawals(channelId);
    expect(initiatedAt).to.be.greaterThan(0n);
    await dust();

    // One delay after the withdrawal started, the round that finalizes it returns the rest, the unit left in the channel.
    await time.increaseTo(Number(initiatedAt) + withdrawDelay);
    const poolBefore = await usdc.balanceOf(privacyPool);
    const rest = DEPOSIT - 3n * PRICE;
    expect((await sweep()).map(({ outcome, amount }) => ({ outcome, amount }))).to.deep.equal([{ outcome: "deposited", amount: rest }]);
    const [refunded] = await pool.queryFilter(pool.filters.RefundDeposited(payer));
    const refundedAt = (await refunded!.getBlock()).timestamp;
    expect(refundedAt - Number(initiatedAt), "seconds from the withdrawal's start to the refund").to.be.at.most(withdrawDelay + 60);
    expect((await usdc.balanceOf(privacyPool)) - poolBefore).to.equal(rest);
    expect(await seller.settlement.channels(channelId)).to.deep.equal([3n * PRICE + 1n, 3n * PRICE]);
    // The stranger's first unit came back with the rest and stays with the tab's payer, nobody's.
    expect(await world.usdcBalance(payer)).to.equal(1n);

    // The stranger goes on, a unit each delay: nothing more moves into the pool.
    for (let round = 0; round < 2; round++) {
      await dust();
      await time.increase(withdrawDelay);
      expect(await sweep()).to.deep.equal([]);
    }
    expect((await usdc.balanceOf(privacyPool)) - poolBefore).to.equal(rest);
  });
});

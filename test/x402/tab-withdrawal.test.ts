import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { expect } from "chai";
import { Wallet, type Signer } from "ethers";
import { expiredPayersWaiting, sweepExpiredPayers } from "../../relayer/x402/payer-sweep.js";
import { DEFAULT_TAB_WITHDRAW_AFTER_SECONDS } from "../../relayer/x402/tab-withdrawal.js";
import { tabSellerOf } from "../../sdk/agent/index.js";
import { createNote, deriveRefundSecrets, nullifierHashOf } from "../../sdk/index.js";
import { payerWallet } from "../../relayer/x402/payer-keys.js";
import type { BatchSettlementRequirement } from "../../sdk/x402/batch-settlement.js";
import { PAYER_KEY_SECRET, relayerKey } from "../relayer/helpers/relayer-harness.js";
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
    const { records, failures } = await sweepExpiredPayers({ store, chain, payerKeySecret: PAYER_KEY_SECRET });
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

  it("with no action by the agent: the payer starts the timed withdrawal, the seller claims its vouchers meanwhile, the rest comes back as the agent's note", async function () {
    const { world, seller } = started;
    const { entrypoint: pool, usdc, privacyPool } = world.chain.facilitator;
    const { time } = world.chain.connection.networkHelpers;

    // The agent opens a tab, pays three requests on it, and is gone; the seller neither claims nor refunds.
    const { opened, deposit } = await abandonedTab(started, world.chain.depositors.alice);
    const { payer, channelId } = opened;
    const sweep = sweepOf(world, payer);
    const { store, chain } = world.relayer.relayer;
    const pending = () => seller.settlement.pendingWithdrawals(channelId);

    // Until two days after the deposit's window the sweep leaves the tab alone: the agent may still pay on it.
    const validBefore = Number(opened.deposit.authorization.erc3009Authorization.validBefore);
    await time.increaseTo(validBefore + DEFAULT_TAB_WITHDRAW_AFTER_SECONDS - 60);
    // A tab's payer needs the relaying key to hold REFUNDER_ROLE: a round without it says so and moves nothing.
    const withoutRole = await sweepExpiredPayers({ store, chain, payerKeySecret: PAYER_KEY_SECRET }).then(() => undefined, (error: unknown) => error);
    expect(withoutRole).to.have.property("code", "REFUNDER_ROLE_MISSING");
    await (await pool.grantRole(await pool.REFUNDER_ROLE(), relayerKey.address)).wait();
    expect(await sweep()).to.deep.equal([]);
    expect((await pending())[1]).to.equal(0n);
    expect(await expiredPayersWaiting({ store, chain })).to.equal(0);

    // Then the payer, funded with gas by the relaying key, starts the withdrawal of all that is unclaimed.
    await time.increaseTo(validBefore + DEFAULT_TAB_WITHDRAW_AFTER_SECONDS + 1);
    expect(await expiredPayersWaiting({ store, chain })).to.equal(1);
    expect(await sweep()).to.deep.equal([]);
    const [amount, initiatedAt] = await pending();
    expect(amount).to.equal(DEPOSIT);
    expect(initiatedAt).to.be.greaterThan(0n);
    expect(await sweep()).to.deep.equal([]);

    // The seller still claims the vouchers it holds during the delay.
    const ofTab = (each: { channelId: string }) => each.channelId.toLowerCase() === channelId.toLowerCase();
    await seller.channels.claimAndSettle({ selectClaimChannels: (channels) => channels.filter(ofTab) });
    expect(await seller.settlement.channels(channelId)).to.deep.equal([DEPOSIT, 3n * PRICE]);
    expect(await world.usdcBalance(seller.payTo)).to.equal(3n * PRICE);

    // After the delay the sweep finalizes it and, in the same round, returns what came back as the agent's note.
    const withdrawDelay = Number((await channelConfigOf(started, channelId)).withdrawDelay);
    await time.increase(withdrawDelay);
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

/** docs/design.md 9, the tab's row, played by the operator: the channel's payer is a key it derives. */
describe("what the operator can move of a live private tab", function () {
  const started = tabSellerWorld();

  it("the operator, with the payer key it derives, can take a live tab's unclaimed money: start the withdrawal at once, finalize it after the delay, and send it anywhere (docs/design.md 9)", async function () {
    const { world, seller } = started;
    const { time, setBalance } = world.chain.connection.networkHelpers;
    const tabs = { channelDirectory: mkdtempSync(path.join(tmpdir(), "agent-tabs-")), depositAtomic: DEPOSIT };
    const { agent, vault, deposit } = await world.newAgent(world.chain.depositors.bob, 1_000_000n, { custody: "non-custodial", tabs });
    expect((await agent.fetch(seller.resourceUrl)).status).to.equal(200);
    const required = decodePaymentRequiredHeader((await fetch(seller.resourceUrl)).headers.get("PAYMENT-REQUIRED") ?? "");
    const accepted = required.accepts.find((entry) => entry.scheme === "batch-settlement") as unknown as BatchSettlementRequirement;
    const { payer, channelId } = (await vault.tab(tabSellerOf(accepted)))!.opened!;

    // Everything the operator needs: its PAYER_KEY_SECRET and the nullifier hash every relay publishes.
    const payerKey = payerWallet(PAYER_KEY_SECRET, nullifierHashOf(deposit.note.nullifier)).connect(world.chain.connection.ethers.provider);
    expect(payerKey.address).to.equal(payer);
    await setBalance(payerKey.address, 10n ** 18n);
    const config = await channelConfigOf(started, channelId);
    const [balance, claimed] = await seller.settlement.channels(channelId);
    const asPayer = seller.settlement.connect(payerKey);
    await (await asPayer.initiateWithdraw(config, balance - claimed)).wait();
    await time.increase(Number(config.withdrawDelay));
    await (await asPayer.finalizeWithdraw(config)).wait();
    const thief = Wallet.createRandom().address;
    await (await world.chain.facilitator.usdc.connect(payerKey).transfer(thief, balance - claimed)).wait();
    expect(await world.usdcBalance(thief)).to.equal(DEPOSIT);
  });
});

/** A stranger who funds a tab's channel with dust: x402's contract takes a deposit from anyone, through any collector. */
describe("a stranger's dust in an abandoned private tab's channel", function () {
  const started = tabSellerWorld();

  it("delays the agent's refund by at most one withdraw delay: a unit deposited into the channel during each delay neither holds back the rest nor enters the pool", async function () {
    const { world, seller } = started;
    const { entrypoint: pool, usdc, privacyPool } = world.chain.facilitator;
    const { time, setBalance } = world.chain.connection.networkHelpers;
    await (await pool.grantRole(await pool.REFUNDER_ROLE(), relayerKey.address)).wait();
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

    const validBefore = Number(opened.deposit.authorization.erc3009Authorization.validBefore);
    await time.increaseTo(validBefore + DEFAULT_TAB_WITHDRAW_AFTER_SECONDS + 1);
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

    // The stranger goes on, a unit each delay: nothing more moves into the pool.
    for (let round = 0; round < 2; round++) {
      await dust();
      await time.increase(withdrawDelay);
      expect(await sweep()).to.deep.equal([]);
    }
    expect((await usdc.balanceOf(privacyPool)) - poolBefore).to.equal(rest);
  });
});

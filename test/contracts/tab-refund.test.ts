import { expect } from "chai";
import { hexlify, randomBytes, type Signer } from "ethers";
import { network } from "hardhat";
import { createLeanIMT, createNote, deriveRefundSecrets, namePublicSignals, nullifierHashOf, type Note, type PaymentTerms } from "../../sdk/index.js";
import { placeBatchSettlementPeer } from "../../x402-peers/batch-settlement.js";
import { buildAuthorization, signAuthorization } from "./helpers/authorizations.js";
import { depositCollectorData, depositNonceOf, signVoucher, type ChannelConfig } from "./helpers/channels.js";
import { deployedFacilitator, type DeployedFacilitator } from "./helpers/fixtures.js";
import { approvedRefundableNote } from "./helpers/notes.js";
import { proveRelayedWithdrawal, type RelayedWithdrawal } from "./helpers/withdrawals.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture, time } = networkHelpers;

const NOTE_VALUE = 2_000_000n;
const DEPOSIT = 100_000n;
const WITHDRAW_DELAY = 900;

// The tab's single-use payer, as the relayer derives it; its key signs the deposit and the refund.
const payer = ethers.Wallet.createRandom(ethers.provider);
const depositSalt = BigInt(hexlify(randomBytes(32)));
let config: ChannelConfig;
let channelId: string;
let payment: PaymentTerms;
let relayed: RelayedWithdrawal;
let origin: Note;

/** A deposit whose label the ASP approved, and x402's batch-settlement contracts on the chain. */
async function approvedDeposit() {
  const facilitator = await loadFixture(deployedFacilitator);
  const approved = await approvedRefundableNote(facilitator, NOTE_VALUE);
  const peer = await placeBatchSettlementPeer(ethers);
  return { ...facilitator, ...peer, ...approved };
}

/** The relay of DEPOSIT to the payer was mined; the payer's deposit funded the tab's channel. */
async function tabOpened() {
  const tab = await loadFixture(approvedDeposit);
  await tab.entrypoint.relay(relayed.withdrawal, relayed.proof, tab.scope, relayed.stateTreeSize);
  const data = await depositCollectorData(payer, tab.usdc, channelId, DEPOSIT, payment.validBefore, depositSalt);
  await tab.settlement.deposit(config, DEPOSIT, tab.collector, data);
  return tab;
}

type Tab = Awaited<ReturnType<typeof approvedDeposit>>;

const recordOf = () => ({
  payer: payer.address,
  amount: DEPOSIT,
  nonce: payment.nonce,
  validBefore: payment.validBefore,
  refundAnchor: namePublicSignals(relayed.proof.pubSignals).refundAnchor,
});

/** The payer's ReceiveWithAuthorization of `value` to the entrypoint. */
async function refundAuthorization({ entrypoint, usdc }: DeployedFacilitator, from: Signer, value: bigint) {
  const authorization = buildAuthorization(await time.latest(), { from: await from.getAddress(), to: await entrypoint.getAddress(), value, nonce: hexlify(randomBytes(32)) });
  const signature = await signAuthorization(from, usdc, "ReceiveWithAuthorization", authorization);
  const { validAfter, validBefore, nonce } = authorization;
  return { validAfter, validBefore, nonce, signature };
}

/** depositTabRefund of the tab, with the payer's authorization of `value` (what came back: DEPOSIT unless claimed). */
const refundTab = async (tab: Tab, overrides: { channelId?: string; depositSalt?: bigint; value?: bigint } = {}) =>
  tab.entrypoint.depositTabRefund(
    tab.usdc,
    nullifierHashOf(origin.nullifier),
    recordOf(),
    overrides.channelId ?? channelId,
    overrides.depositSalt ?? depositSalt,
    await refundAuthorization(tab, payer, overrides.value ?? DEPOSIT),
  );

/** The agent's refund note of `value`: the tab's origin's label, its refund secrets, the refund form. */
const refundNoteOf = (value: bigint) => createNote(value, origin.label, deriveRefundSecrets(origin), "refund");

/** The tab's seller claims `amount` with the tab key's voucher, and refunds all the rest to the payer. */
async function claimAndRefund(tab: Tab, amount: bigint) {
  const chainId = (await ethers.provider.getNetwork()).chainId;
  const signature = await signVoucher(tab.accounts.stranger, chainId, channelId, amount);
  await tab.settlement.connect(tab.accounts.recipient).claim([{ voucher: { channel: config, maxClaimableAmount: amount }, signature, totalClaimed: amount }]);
  await tab.settlement.connect(tab.accounts.recipient).refund(config, 2n ** 128n - 1n);
}

describe("refunds of private tabs (x402 batch-settlement channels funded by a single-use payer)", function () {
  before(async function () {
    const { note, aspTree, entrypoint, scope, usdc, settlement, accounts } = await loadFixture(approvedDeposit);
    origin = note;
    config = {
      payer: payer.address,
      payerAuthorizer: accounts.stranger.address,
      receiver: accounts.recipient.address,
      receiverAuthorizer: accounts.recipient.address,
      token: await usdc.getAddress(),
      withdrawDelay: WITHDRAW_DELAY,
      salt: hexlify(randomBytes(32)),
    };
    channelId = await settlement.getChannelId(config);
    payment = { nonce: depositNonceOf(channelId, depositSalt), validBefore: BigInt((await time.latest()) + 3_600) };
    relayed = await proveRelayedWithdrawal({
      note,
      withdrawnValue: DEPOSIT,
      stateTree: createLeanIMT([note.commitment]),
      aspTree,
      relayData: { recipient: payer.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n, payment },
      entrypoint: await entrypoint.getAddress(),
      scope,
    });
  });

  it("returns a tab its seller never claimed, withdrawn by the tab's key after the delay, as the agent's refund note", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, privacyPool, settlement, usdc, accounts } = tab;
    await settlement.connect(accounts.stranger).initiateWithdraw(config, DEPOSIT);
    await time.increase(WITHDRAW_DELAY);
    await settlement.connect(accounts.stranger).finalizeWithdraw(config);
    const refundNote = refundNoteOf(DEPOSIT);

    const refund = refundTab(tab);
    await expect(refund).to.changeTokenBalances(ethers, usdc, [payer, privacyPool], [-DEPOSIT, DEPOSIT]);
    await expect(refund).to.emit(entrypoint, "RefundDeposited").withArgs(payer.address, refundNote.commitment, nullifierHashOf(origin.nullifier), DEPOSIT);
    await expect(refund).to.emit(privacyPool, "LeafInserted");
  });

  it("returns a tab its seller refunded in full before any claim", async function () {
    const tab = await loadFixture(tabOpened);
    await tab.settlement.connect(tab.accounts.recipient).refund(config, DEPOSIT);
    await expect(refundTab(tab)).to.changeTokenBalances(ethers, tab.usdc, [payer, tab.privacyPool], [-DEPOSIT, DEPOSIT]);
    await expect(refundTab(tab)).to.be.revertedWithCustomError(tab.privacyPool, "OriginAlreadyRefunded");
  });

  it("returns the rest after its seller's claims as the agent's refund note of that value, once the channel is drained", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, privacyPool, usdc } = tab;
    await claimAndRefund(tab, 3_000n);
    const rest = DEPOSIT - 3_000n;
    const refund = refundTab(tab, { value: rest });
    await expect(refund).to.changeTokenBalances(ethers, usdc, [payer, privacyPool], [-rest, rest]);
    await expect(refund).to.emit(entrypoint, "RefundDeposited").withArgs(payer.address, refundNoteOf(rest).commitment, nullifierHashOf(origin.nullifier), rest);
    await expect(refundTab(tab, { value: rest })).to.be.revertedWithCustomError(privacyPool, "OriginAlreadyRefunded");
  });

  it("spends that rest note by a proof, like any note of the origin's label", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, privacyPool, usdc, aspTree, scope, accounts } = tab;
    await claimAndRefund(tab, 3_000n);
    await refundTab(tab, { value: DEPOSIT - 3_000n });
    const stateTree = createLeanIMT([origin.commitment, namePublicSignals(relayed.proof.pubSignals).newCommitment, refundNoteOf(DEPOSIT - 3_000n).commitment]);
    expect(await privacyPool.currentRoot()).to.equal(stateTree.root);
    const spend = await proveRelayedWithdrawal({
      note: refundNoteOf(DEPOSIT - 3_000n),
      withdrawnValue: 50_000n,
      stateTree,
      aspTree,
      relayData: { recipient: accounts.recipient.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n },
      entrypoint: await entrypoint.getAddress(),
      scope,
    });
    const relay = entrypoint.relay(spend.withdrawal, spend.proof, scope, spend.stateTreeSize);
    await expect(relay).to.changeTokenBalances(ethers, usdc, [privacyPool, accounts.recipient], [-50_000n, 50_000n]);
  });

  it("moves exactly the rest: the payer's authorization of the whole payout, or a refund while money is unclaimed, is refused", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, settlement, usdc, privacyPool, accounts } = tab;
    await expect(refundTab(tab)).to.be.revertedWithCustomError(entrypoint, "TabRestNotReturned");
    const chainId = (await ethers.provider.getNetwork()).chainId;
    const voucher = await signVoucher(accounts.stranger, chainId, channelId, 3_000n);
    await settlement.connect(accounts.recipient).claim([{ voucher: { channel: config, maxClaimableAmount: 3_000n }, signature: voucher, totalClaimed: 3_000n }]);
    await expect(refundTab(tab, { value: DEPOSIT - 3_000n })).to.be.revertedWithCustomError(entrypoint, "TabRestNotReturned");
    await settlement.connect(accounts.recipient).refund(config, DEPOSIT);
    const poolBalance = await usdc.balanceOf(privacyPool);
    // The entrypoint takes the rest it computes, so an authorization of any other value does not verify.
    await expect(refundTab(tab, { value: DEPOSIT })).to.be.revertedWithCustomError(usdc, "InvalidSignature");
    expect(await usdc.balanceOf(payer)).to.equal(DEPOSIT - 3_000n);
    expect(await usdc.balanceOf(privacyPool)).to.equal(poolBalance);
  });

  it("returns none of a stranger's deposit into the channel: it stays at the payer", async function () {
    const tab = await loadFixture(tabOpened);
    const { settlement, usdc, privacyPool, accounts } = tab;
    const gift = await ethers.deployContract("GiftDepositCollector");
    await usdc.mint(gift, 7_000n);
    await settlement.connect(accounts.stranger).deposit(config, 7_000n, gift, "0x");
    await claimAndRefund(tab, 3_000n);
    expect(await usdc.balanceOf(payer)).to.equal(DEPOSIT + 7_000n - 3_000n);
    await expect(refundTab(tab, { value: DEPOSIT - 3_000n })).to.changeTokenBalances(ethers, usdc, [payer, privacyPool], [-(DEPOSIT - 3_000n), DEPOSIT - 3_000n]);
    expect(await usdc.balanceOf(payer)).to.equal(7_000n);
  });

  it("returns the rest once it is back at the payer, whatever a stranger deposits into the channel after: dust there holds nothing back", async function () {
    const tab = await loadFixture(tabOpened);
    const { settlement, usdc, privacyPool, accounts } = tab;
    await claimAndRefund(tab, 3_000n);
    const gift = await ethers.deployContract("GiftDepositCollector");
    await usdc.mint(gift, 1n);
    await settlement.connect(accounts.stranger).deposit(config, 1n, gift, "0x");
    expect(await settlement.channels(channelId)).to.deep.equal([3_001n, 3_000n]);
    await expect(refundTab(tab, { value: DEPOSIT - 3_000n })).to.changeTokenBalances(ethers, usdc, [payer, privacyPool], [-(DEPOSIT - 3_000n), DEPOSIT - 3_000n]);
    // The stranger's unit stays in the channel: it was never the agent's.
    expect(await settlement.channels(channelId)).to.deep.equal([3_001n, 3_000n]);
  });

  it("refuses a tab whose seller claimed the whole payout: nothing came back", async function () {
    const tab = await loadFixture(tabOpened);
    await claimAndRefund(tab, DEPOSIT);
    await expect(refundTab(tab, { value: 0n })).to.be.revertedWithCustomError(tab.entrypoint, "TabFullyClaimed");
  });

  it("refuses a channel other than the one the payment's deposit funds", async function () {
    const tab = await loadFixture(tabOpened);
    await tab.settlement.connect(tab.accounts.recipient).refund(config, DEPOSIT);
    await expect(refundTab(tab, { depositSalt: depositSalt + 1n })).to.be.revertedWithCustomError(tab.entrypoint, "TabChannelMismatch");
    await expect(refundTab(tab, { channelId: hexlify(randomBytes(32)) })).to.be.revertedWithCustomError(tab.entrypoint, "TabChannelMismatch");
  });

  it("refuses a tab never opened, which depositRefund returns once its deposit authorization expired", async function () {
    const tab = await loadFixture(approvedDeposit);
    await tab.entrypoint.relay(relayed.withdrawal, relayed.proof, tab.scope, relayed.stateTreeSize);
    await expect(refundTab(tab)).to.be.revertedWithCustomError(tab.entrypoint, "TabNotOpened");
    await time.increaseTo(payment.validBefore);
    const refund = tab.entrypoint.depositRefund(tab.usdc, nullifierHashOf(origin.nullifier), recordOf(), await refundAuthorization(tab, payer, DEPOSIT));
    await expect(refund).to.changeTokenBalances(ethers, tab.usdc, [payer, tab.privacyPool], [-DEPOSIT, DEPOSIT]);
  });

  it("is the refunder's alone", async function () {
    const tab = await loadFixture(tabOpened);
    await tab.settlement.connect(tab.accounts.recipient).refund(config, DEPOSIT);
    const stranger = tab.entrypoint.connect(tab.accounts.stranger);
    await expect(
      stranger.depositTabRefund(tab.usdc, nullifierHashOf(origin.nullifier), recordOf(), channelId, depositSalt, await refundAuthorization(tab, payer, DEPOSIT)),
    ).to.be.revertedWithCustomError(tab.entrypoint, "AccessControlUnauthorizedAccount");
  });
});

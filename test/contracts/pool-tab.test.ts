import { expect } from "chai";
import { AbiCoder, hexlify, keccak256, randomBytes, Wallet } from "ethers";
import { network } from "hardhat";
import {
  createLeanIMT,
  createNote,
  deriveRefundSecrets,
  encodeTabOpening,
  namePublicSignals,
  nullifierHashOf,
  type TabChannelConfig,
  type TabOpening,
  type TabRecord,
} from "../../sdk/index.js";
import { placeBatchSettlementPeer } from "../../x402-peers/batch-settlement.js";
import { signVoucher } from "./helpers/channels.js";
import { deployedFacilitator } from "./helpers/fixtures.js";
import { approvedNote } from "./helpers/notes.js";
import { proveRelayedWithdrawal, proveTabOpening, type RelayedWithdrawal } from "./helpers/withdrawals.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture, time } = networkHelpers;

const NOTE_VALUE = 5_000_000n;
const FEE_BPS = 100n;
const WITHDRAWN = 1_010_101n;
/** What the relay deposits into the channel: the withdrawn value less 1%. */
const DEPOSIT = WITHDRAWN - (WITHDRAWN * FEE_BPS) / 10_000n;
const PRICE = 10_000n;
const WITHDRAW_DELAY = 900;
const LIFETIME = 86_400n;

const CHANNEL_CONFIG = "tuple(address,address,address,address,address,uint40,bytes32)";
const TAB_RECORD = `tuple(${CHANNEL_CONFIG},uint256,uint256,uint256)`;

/** The agent's tab key: the channel's payerAuthorizer, the only signer of its vouchers. */
const tabKey = Wallet.createRandom();

/** One approved note, x402's batch-settlement contracts on the chain, and a seller with its own authorizer. */
async function poolWithNote() {
  const facilitator = await loadFixture(deployedFacilitator);
  const approved = await approvedNote(facilitator, NOTE_VALUE, 11n);
  const peer = await placeBatchSettlementPeer(ethers);
  return { ...facilitator, ...peer, ...approved };
}

type Pool = Awaited<ReturnType<typeof poolWithNote>>;

async function channelFor(pool: Pool, overrides: Partial<TabChannelConfig> = {}): Promise<TabChannelConfig> {
  return {
    payer: await pool.entrypoint.tabPayerOf(nullifierHashOf(pool.note.nullifier)),
    payerAuthorizer: tabKey.address,
    receiver: pool.accounts.recipient.address,
    receiverAuthorizer: pool.accounts.recipient.address,
    token: await pool.usdc.getAddress(),
    withdrawDelay: WITHDRAW_DELAY,
    salt: hexlify(randomBytes(32)),
    ...overrides,
  };
}

async function openingFor(pool: Pool, overrides: Partial<TabChannelConfig> = {}): Promise<TabOpening> {
  return {
    channel: await channelFor(pool, overrides),
    reclaimableAfter: BigInt(await time.latest()) + LIFETIME,
    feeRecipient: pool.accounts.feeRecipient.address,
    relayFeeBPS: FEE_BPS,
  };
}

async function proveFor(pool: Pool, opening: TabOpening, relayFeeBPS?: bigint) {
  return proveTabOpening({
    note: pool.note,
    withdrawnValue: WITHDRAWN,
    stateTree: pool.stateTree,
    aspTree: pool.aspTree,
    entrypoint: await pool.entrypoint.getAddress(),
    scope: pool.scope,
    opening,
    ...(relayFeeBPS !== undefined && { relayFeeBPS }),
  });
}

const relay = (pool: Pool, relayed: RelayedWithdrawal, sender = pool.accounts.stranger) =>
  pool.entrypoint.connect(sender).relay(relayed.withdrawal, relayed.proof, pool.scope, relayed.stateTreeSize);

const recordOf = (opening: TabOpening, relayed: RelayedWithdrawal): TabRecord => ({
  channel: opening.channel,
  deposit: DEPOSIT,
  reclaimableAfter: opening.reclaimableAfter,
  refundAnchor: namePublicSignals(relayed.proof.pubSignals).refundAnchor,
});

const channelTuple = (c: TabChannelConfig) => [c.payer, c.payerAuthorizer, c.receiver, c.receiverAuthorizer, c.token, c.withdrawDelay, c.salt];
const recordHash = (record: TabRecord) =>
  keccak256(AbiCoder.defaultAbiCoder().encode([TAB_RECORD], [[channelTuple(record.channel), record.deposit, record.reclaimableAfter, record.refundAnchor]]));

/** The tab, opened by a stranger's relay of the agent's proof. */
async function tabOpened() {
  const pool = await loadFixture(poolWithNote);
  const opening = await openingFor(pool);
  const relayed = await proveFor(pool, opening);
  await relay(pool, relayed);
  const channelId = await pool.settlement.getChannelId(opening.channel);
  const origin = nullifierHashOf(pool.note.nullifier);
  return { ...pool, opening, relayed, channelId, origin, record: recordOf(opening, relayed), payer: opening.channel.payer };
}

type Tab = Awaited<ReturnType<typeof tabOpened>>;

/** The seller claims `amount` with the tab key's voucher of that total. */
async function claim(tab: Tab, amount: bigint) {
  const chainId = (await ethers.provider.getNetwork()).chainId;
  const signature = await signVoucher(tabKey, chainId, tab.channelId, amount);
  await tab.settlement.connect(tab.accounts.recipient).claim([{ voucher: { channel: tab.opening.channel, maxClaimableAmount: amount }, signature, totalClaimed: amount }]);
}

const refundNoteOf = (tab: Tab, value: bigint) => createNote(value, tab.note.label, deriveRefundSecrets(tab.note), "refund");

describe("private tabs paid by the pool itself: the relay deposits into a channel whose payer is the note's TabPayer", function () {
  it("opens the tab in the relay's one transaction: the channel holds the note's value less the fee, the pool recorded the tab, nothing stays with the entrypoint", async function () {
    const pool = await loadFixture(poolWithNote);
    const opening = await openingFor(pool);
    const relayed = await proveFor(pool, opening);
    const channelId = await pool.settlement.getChannelId(opening.channel);

    const opened = relay(pool, relayed);
    await expect(opened).to.changeTokenBalances(ethers, pool.usdc, [pool.privacyPool, pool.settlement, pool.entrypoint], [-DEPOSIT, DEPOSIT, 0n]);
    await expect(opened).to.emit(pool.settlement, "Deposited").withArgs(channelId, await pool.entrypoint.getAddress(), DEPOSIT, DEPOSIT);
    expect(await pool.settlement.channels(channelId)).to.deep.equal([DEPOSIT, 0n]);
    expect(await pool.privacyPool.spendRecordOf(nullifierHashOf(pool.note.nullifier))).to.equal(recordHash(recordOf(opening, relayed)));
    expect(await pool.privacyPool.accruedFeesOf(pool.accounts.feeRecipient)).to.equal(WITHDRAWN - DEPOSIT);
    expect(await ethers.provider.getCode(opening.channel.payer), "the payer is deployed only when something must leave it").to.equal("0x");
    await expect(relay(pool, relayed)).to.be.revertedWithCustomError(pool.privacyPool, "NullifierAlreadySpent");
  });

  it("refuses a channel whose payer is not the note's TabPayer, another token, a withdraw delay above 7 days, another fee, altered data, and a batch", async function () {
    const pool = await loadFixture(poolWithNote);
    const { entrypoint } = pool;
    const refuse = async (opening: TabOpening, error: string, relayFeeBPS?: bigint) =>
      expect(relay(pool, await proveFor(pool, opening, relayFeeBPS))).to.be.revertedWithCustomError(entrypoint, error);
    await refuse(await openingFor(pool, { payer: pool.accounts.stranger.address }), "TabPayerMismatch");
    await refuse(await openingFor(pool, { payer: await entrypoint.tabPayerOf(1n) }), "TabPayerMismatch");
    await refuse(await openingFor(pool, { token: await pool.entrypoint.getAddress() }), "TabTokenMismatch");
    await refuse(await openingFor(pool, { withdrawDelay: 7 * 86_400 + 1 }), "TabWithdrawDelayAboveMaximum");
    await refuse(await openingFor(pool), "RelayFeeMismatch", 0n);

    const relayed = await proveFor(pool, await openingFor(pool));
    const redirected = { ...relayed.withdrawal, data: encodeTabOpening({ ...(await openingFor(pool)), feeRecipient: pool.accounts.stranger.address }) };
    await expect(entrypoint.relay(redirected, relayed.proof, pool.scope, relayed.stateTreeSize)).to.be.revertedWithCustomError(entrypoint, "ContextMismatch");
    await expect(entrypoint.relayBatch([relayed.withdrawal], [relayed.proof], pool.scope, [relayed.stateTreeSize])).to.be.revertedWithCustomError(entrypoint, "TabOpeningNotBatched");
    expect(await pool.privacyPool.isNullifierSpent(nullifierHashOf(pool.note.nullifier))).to.equal(false);
  });

  it("collects for no one but x402's contract within a tab's relay: a stranger's deposit naming the entrypoint as collector, or a direct call, is refused", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, settlement, usdc, accounts } = tab;
    await usdc.mint(entrypoint, 5n);
    await expect(settlement.connect(accounts.stranger).deposit(tab.opening.channel, 5n, entrypoint, "0x")).to.be.revertedWithCustomError(entrypoint, "NotDepositing");
    await expect(entrypoint.connect(accounts.stranger).collect(tab.payer, usdc, 5n, tab.channelId, "0x")).to.be.revertedWithCustomError(entrypoint, "NotDepositing");
    expect(await usdc.balanceOf(entrypoint)).to.equal(5n);
  });

  it("returns the rest the seller refunded as the agent's refund note, by anyone's returnTab, once", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, settlement, privacyPool, usdc, accounts } = tab;
    await claim(tab, 3n * PRICE);
    await expect(entrypoint.returnTab(usdc, tab.origin, tab.record), "before the rest is back").to.be.revertedWithCustomError(entrypoint, "TabRestNotReturned");
    await settlement.connect(accounts.recipient).refund(tab.opening.channel, 2n ** 128n - 1n);
    const rest = DEPOSIT - 3n * PRICE;
    expect(await usdc.balanceOf(tab.payer)).to.equal(rest);

    const returned = entrypoint.connect(accounts.stranger).returnTab(usdc, tab.origin, tab.record);
    await expect(returned).to.changeTokenBalances(ethers, usdc, [tab.payer, privacyPool], [-rest, rest]);
    await expect(returned).to.emit(entrypoint, "RefundDeposited").withArgs(tab.payer, refundNoteOf(tab, rest).commitment, tab.origin, rest);
    await expect(entrypoint.returnTab(usdc, tab.origin, tab.record)).to.be.revertedWithCustomError(entrypoint, "TabRestNotReturned");
    await usdc.mint(tab.payer, rest);
    await expect(entrypoint.returnTab(usdc, tab.origin, tab.record), "with a gift of the rest again").to.be.revertedWithCustomError(privacyPool, "OriginAlreadyRefunded");
  });

  it("takes back a tab nobody drains by anyone's call after its lifetime, one withdraw delay later, paying the seller's claims meanwhile; a stranger's dust each delay neither holds it back nor enters the note", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, settlement, privacyPool, usdc, accounts } = tab;
    const anyone = accounts.stranger;
    await claim(tab, PRICE);
    await expect(entrypoint.connect(anyone).withdrawTab(usdc, tab.origin, tab.record)).to.be.revertedWithCustomError(entrypoint, "TabStillOpen");
    await expect(entrypoint.connect(anyone).withdrawTab(usdc, tab.origin, { ...tab.record, reclaimableAfter: 0n })).to.be.revertedWithCustomError(entrypoint, "TabNotRecorded");

    const gift = await ethers.deployContract("GiftDepositCollector");
    await usdc.mint(gift, 100n);
    const dust = () => settlement.connect(anyone).deposit(tab.opening.channel, 1n, gift, "0x");
    await dust();
    await time.increaseTo(tab.opening.reclaimableAfter);
    await entrypoint.connect(anyone).withdrawTab(usdc, tab.origin, tab.record);
    const [pending, initiatedAt] = await settlement.pendingWithdrawals(tab.channelId);
    expect(pending).to.equal(DEPOSIT - PRICE + 1n);
    await dust();
    await claim(tab, 2n * PRICE);
    await expect(entrypoint.connect(anyone).withdrawTab(usdc, tab.origin, tab.record)).to.be.revertedWithCustomError(settlement, "WithdrawDelayNotElapsed");

    await time.increaseTo(initiatedAt + BigInt(WITHDRAW_DELAY));
    await entrypoint.connect(anyone).withdrawTab(usdc, tab.origin, tab.record);
    const rest = DEPOSIT - 2n * PRICE;
    const returned = entrypoint.connect(anyone).returnTab(usdc, tab.origin, tab.record);
    await expect(returned).to.changeTokenBalance(ethers, usdc, privacyPool, rest);
    await expect(returned).to.emit(entrypoint, "RefundDeposited").withArgs(tab.payer, refundNoteOf(tab, rest).commitment, tab.origin, rest);
    // The stranger's units came back with the rest and stay with the payer, nobody's; the channel holds the seller's claims.
    expect(await usdc.balanceOf(tab.payer)).to.equal(2n);
    expect(await settlement.channels(tab.channelId)).to.deep.equal([2n * PRICE, 2n * PRICE]);
  });

  it("the agent's tab key, or a thief of it, withdraws only to the tab's payer, and that comes back only as the agent's note", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, settlement, privacyPool, usdc, accounts } = tab;
    const key = tabKey.connect(ethers.provider);
    await accounts.admin.sendTransaction({ to: key.address, value: 10n ** 18n });
    await settlement.connect(key).initiateWithdraw(tab.opening.channel, DEPOSIT);
    await time.increase(WITHDRAW_DELAY);
    await expect(settlement.connect(key).finalizeWithdraw(tab.opening.channel)).to.changeTokenBalances(ethers, usdc, [tab.payer, key], [DEPOSIT, 0n]);
    await expect(entrypoint.connect(accounts.stranger).returnTab(usdc, tab.origin, tab.record)).to.changeTokenBalance(ethers, usdc, privacyPool, DEPOSIT);
  });

  it("the operator, with every role of the entrypoint, moves none of an open tab's money nor a returned rest anywhere but the agent's note", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, settlement, privacyPool, usdc, accounts } = tab;
    const operator = accounts.admin;
    await settlement.connect(accounts.recipient).refund(tab.opening.channel, PRICE);
    await time.increaseTo(tab.opening.reclaimableAfter);
    // Its withdrawal of the rest starts, and the payer is deployed; the operator then tries everything it could call.
    await entrypoint.connect(operator).withdrawTab(usdc, tab.origin, tab.record);
    const payer = await ethers.getContractAt("TabPayer", tab.payer);

    await expect(payer.connect(operator).pay(usdc, operator, PRICE)).to.be.revertedWithCustomError(payer, "OnlyEntrypoint");
    const withdrawCall = settlement.interface.encodeFunctionData("initiateWithdraw", [tab.opening.channel, 1n]);
    await expect(payer.connect(operator).act(settlement, withdrawCall)).to.be.revertedWithCustomError(payer, "OnlyEntrypoint");
    await expect(settlement.connect(operator).initiateWithdraw(tab.opening.channel, 1n)).to.be.revertedWithCustomError(settlement, "NotPayerSide");
    await expect(settlement.connect(operator).refund(tab.opening.channel, 1n)).to.be.revertedWithCustomError(settlement, "NotReceiverSide");
    await expect(entrypoint.connect(operator).collect(tab.payer, usdc, PRICE, tab.channelId, "0x")).to.be.revertedWithCustomError(entrypoint, "NotDepositing");
    // A record of its own making: another deposit, another anchor, a channel of its own.
    const forged = [
      { ...tab.record, deposit: tab.record.deposit + 1n },
      { ...tab.record, refundAnchor: tab.record.refundAnchor + 1n },
      { ...tab.record, channel: { ...tab.record.channel, receiver: operator.address } },
    ];
    for (const record of forged) {
      await expect(entrypoint.connect(operator).returnTab(usdc, tab.origin, record)).to.be.revert(ethers);
      await expect(entrypoint.connect(operator).withdrawTab(usdc, tab.origin, record)).to.be.revertedWithCustomError(entrypoint, "TabNotRecorded");
    }
    // As the return of a pool authorization of the same note: the pool recorded the tab, not that.
    const transfer = { payTo: operator.address, value: PRICE, validAfter: 0n, validBefore: 1n };
    await expect(entrypoint.connect(operator).refundAuthorization(usdc, tab.origin, transfer, tab.record.refundAnchor)).to.be.revertedWithCustomError(privacyPool, "RefundNotRecorded");

    expect(await usdc.balanceOf(tab.payer)).to.equal(PRICE);
    expect(await usdc.balanceOf(operator)).to.equal(0n);
    await time.increase(WITHDRAW_DELAY);
    await entrypoint.connect(operator).withdrawTab(usdc, tab.origin, tab.record);
    await expect(entrypoint.connect(operator).returnTab(usdc, tab.origin, tab.record)).to.changeTokenBalances(ethers, usdc, [privacyPool, operator], [DEPOSIT, 0n]);
  });

  it("a stranger's gift to the tab's payer neither inflates the agent's note nor enters the pool", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, settlement, privacyPool, usdc, accounts } = tab;
    await claim(tab, PRICE);
    await settlement.connect(accounts.recipient).refund(tab.opening.channel, 2n ** 128n - 1n);
    await usdc.mint(tab.payer, 7n);
    const rest = DEPOSIT - PRICE;
    await expect(entrypoint.returnTab(usdc, tab.origin, tab.record)).to.emit(entrypoint, "RefundDeposited").withArgs(tab.payer, refundNoteOf(tab, rest).commitment, tab.origin, rest);
    expect(await usdc.balanceOf(tab.payer)).to.equal(7n);
    expect(await usdc.balanceOf(privacyPool)).to.equal(NOTE_VALUE - WITHDRAWN + (WITHDRAWN - DEPOSIT) + rest);
  });

  it("makes the rest a note of the origin's label: spent by the agent's proof like any other, and excluded with its depositor once the label leaves the set", async function () {
    const tab = await loadFixture(tabOpened);
    const { entrypoint, settlement, privacyPool, usdc, aspTree, scope, accounts } = tab;
    await settlement.connect(accounts.recipient).refund(tab.opening.channel, 2n ** 128n - 1n);
    await entrypoint.returnTab(usdc, tab.origin, tab.record);
    const refundNote = refundNoteOf(tab, DEPOSIT);
    const stateTree = createLeanIMT([tab.note.commitment, tab.relayed.changeNote.commitment, refundNote.commitment]);
    expect(await privacyPool.currentRoot()).to.equal(stateTree.root);
    const spend = await proveRelayedWithdrawal({
      note: refundNote,
      withdrawnValue: DEPOSIT,
      stateTree,
      aspTree,
      relayData: { recipient: accounts.recipient.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n },
      entrypoint: await entrypoint.getAddress(),
      scope,
    });
    const beforeExclusion = await networkHelpers.takeSnapshot();
    await expect(entrypoint.relay(spend.withdrawal, spend.proof, scope, spend.stateTreeSize)).to.changeTokenBalance(ethers, usdc, accounts.recipient, DEPOSIT);
    await beforeExclusion.restore();
    // The depositor is screened out: the curator's next root is the empty set, revoking every earlier root.
    await entrypoint.revokeAndUpdateRoot(0n, 0n, "bafy-excluded", []);
    await expect(entrypoint.relay(spend.withdrawal, spend.proof, scope, spend.stateTreeSize)).to.be.revertedWithCustomError(entrypoint, "AspRootRevoked");
  });

  it("refuses to return a tab its seller claimed in full", async function () {
    const tab = await loadFixture(tabOpened);
    await claim(tab, DEPOSIT);
    await expect(tab.entrypoint.returnTab(tab.usdc, tab.origin, tab.record)).to.be.revertedWithCustomError(tab.entrypoint, "TabFullyClaimed");
  });
});

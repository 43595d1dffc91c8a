// Gas of a private tab (docs/design.md 13) on x402's batch-settlement, our contract peer placed where @x402/evm
// expects it: the open (the relay of the deposit to a single-use payer, then the payer's channel deposit), the seller's
// claim of 100 requests' cumulative voucher and its settle, the cooperative refund of the rest as @x402/evm's
// facilitator sends it (claim + refund in one multicall) and that rest's return into the pool as the agent's refund
// note, the timed withdrawal of a tab never claimed and its payout's return. Real Groth16 proofs, a fresh chain whose state tree holds the tab notes only (the relay's and
// the refund's tree-dependent parts grow with the pool as bench:gas's relay rows show).
import type { ContractTransactionResponse } from "ethers";
import { hexlify, randomBytes, Wallet, ZeroHash } from "ethers";
import { network } from "hardhat";
import { createLeanIMT, namePublicSignals, nullifierHashOf, type Note } from "../../sdk/index.js";
import { buildAuthorization, signAuthorization } from "../../test/contracts/helpers/authorizations.js";
import { depositCollectorData, depositNonceOf, signClaimBatch, signRefund, signVoucher, type ChannelConfig } from "../../test/contracts/helpers/channels.js";
import { deployedFacilitator } from "../../test/contracts/helpers/fixtures.js";
import { depositNote, secretsFor } from "../../test/contracts/helpers/notes.js";
import { proveRelayedWithdrawal } from "../../test/contracts/helpers/withdrawals.js";
import { placeBatchSettlementPeer } from "../../x402-peers/batch-settlement.js";

const NOTE_VALUE = 5_000_000n;
const DEPOSIT = 1_000_000n;
const PRICE = 1_000n;
export const TAB_REQUESTS = 100;
const WITHDRAW_DELAY = 900;

export interface TabGas {
  /** The relay of the deposit to the tab's single-use payer. */
  openRelay: number;
  /** The payer's deposit into the channel (the seller's facilitator sends it with the first request). */
  openDeposit: number;
  /** One claim of the voucher of TAB_REQUESTS requests. */
  claim: number;
  settle: number;
  /** The rest refunded to the payer with the last claim, in one multicall (claimWithSignature + refundWithSignature). */
  claimAndRefund: number;
  /** Entrypoint.depositTabRefund of that rest: it comes back into the pool as the agent's refund note. */
  restRefund: number;
  /** initiateWithdraw + finalizeWithdraw of a tab its seller never claimed. */
  timedWithdrawal: number;
  /** Entrypoint.depositTabRefund of that tab's payout. */
  tabRefund: number;
  /** Everything a tab of TAB_REQUESTS requests costs, open to the rest back in the pool, per request. */
  perRequest: number;
}

async function gasOf(sent: Promise<ContractTransactionResponse>): Promise<number> {
  const receipt = await (await sent).wait();
  if (!receipt) throw new Error("transaction was not mined");
  return Number(receipt.gasUsed);
}

export async function measureTabGas(): Promise<TabGas> {
  const connection = await network.create();
  const facilitator = await deployedFacilitator(connection);
  const { entrypoint, privacyPool, usdc, scope, accounts } = facilitator;
  const { ethers } = connection;
  const { settlement, collector } = await placeBatchSettlementPeer(ethers);
  const chainId = (await ethers.provider.getNetwork()).chainId;
  const [sellerAuthorizer, tabKey] = (await ethers.getSigners()).slice(6, 8);
  if (!sellerAuthorizer || !tabKey) throw new Error("the bench needs 8 accounts");
  await entrypoint.grantRole(await entrypoint.REFUNDER_ROLE(), accounts.admin);
  // A live seller and pool already hold USDC.
  for (const holder of [privacyPool, accounts.recipient]) await usdc.mint(holder, 1n);

  const notes: Note[] = [];
  for (const tag of [1n, 2n]) notes.push(await depositNote(facilitator, accounts.depositor, NOTE_VALUE, secretsFor(tag)));
  const aspTree = createLeanIMT(notes.map((note) => note.label));
  await entrypoint.updateRoot(aspTree.root, aspTree.depth, "bench-tabs");
  const stateTree = createLeanIMT(notes.map((note) => note.commitment));

  /** A tab of `note`: its payer funded by a relayed proof, then its channel by the payer's deposit. */
  async function openTab(note: Note) {
    const payer = Wallet.createRandom(ethers.provider);
    const config: ChannelConfig = {
      payer: payer.address,
      payerAuthorizer: tabKey!.address,
      receiver: accounts.recipient.address,
      receiverAuthorizer: sellerAuthorizer!.address,
      token: await usdc.getAddress(),
      withdrawDelay: WITHDRAW_DELAY,
      salt: ZeroHash,
    };
    const channelId = await settlement.getChannelId(config);
    const depositSalt = BigInt(hexlify(randomBytes(32)));
    const payment = { nonce: depositNonceOf(channelId, depositSalt), validBefore: BigInt((await connection.networkHelpers.time.latest()) + 3_600) };
    const relayed = await proveRelayedWithdrawal({
      note,
      withdrawnValue: DEPOSIT,
      stateTree,
      aspTree,
      relayData: { recipient: payer.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n, payment },
      entrypoint: await entrypoint.getAddress(),
      scope,
    });
    const openRelay = await gasOf(entrypoint.connect(accounts.stranger).relay(relayed.withdrawal, relayed.proof, scope, relayed.stateTreeSize));
    stateTree.insert(namePublicSignals(relayed.proof.pubSignals).newCommitment);
    const data = await depositCollectorData(payer, usdc, channelId, DEPOSIT, payment.validBefore, depositSalt);
    const openDeposit = await gasOf(settlement.connect(accounts.stranger).deposit(config, DEPOSIT, collector, data));
    const record = { payer: payer.address, amount: DEPOSIT, nonce: payment.nonce, validBefore: payment.validBefore, refundAnchor: namePublicSignals(relayed.proof.pubSignals).refundAnchor };
    return { payer, config, channelId, depositSalt, record, note, openRelay, openDeposit };
  }

  const spent = await openTab(notes[0]!);
  const total = BigInt(TAB_REQUESTS) * PRICE;
  const rowOf = async (amount: bigint) => ({
    voucher: { channel: spent.config, maxClaimableAmount: amount },
    signature: await signVoucher(tabKey, chainId, spent.channelId, amount),
    totalClaimed: amount,
  });
  const claim = await gasOf(settlement.connect(sellerAuthorizer).claim([await rowOf(total - PRICE)]));
  const settle = await gasOf(settlement.connect(accounts.stranger).settle(accounts.recipient, usdc));
  const last = await rowOf(total);
  const claimSignature = await signClaimBatch(sellerAuthorizer, chainId, [{ channelId: spent.channelId, maxClaimableAmount: total, totalClaimed: total }]);
  const refundSignature = await signRefund(sellerAuthorizer, chainId, spent.channelId, 0n, DEPOSIT - total);
  const claimAndRefund = await gasOf(
    settlement.connect(accounts.stranger).multicall([
      settlement.interface.encodeFunctionData("claimWithSignature", [[last], claimSignature]),
      settlement.interface.encodeFunctionData("refundWithSignature", [spent.config, DEPOSIT - total, 0n, refundSignature]),
    ]),
  );

  /** The payer's `value`, back from the channel, into the pool as the agent's refund note (the payer sweep's call). */
  const returnToPool = async (tab: Awaited<ReturnType<typeof openTab>>, value: bigint) => {
    const authorization = buildAuthorization(await connection.networkHelpers.time.latest(), {
      from: tab.payer.address, to: await entrypoint.getAddress(), value, nonce: hexlify(randomBytes(32)),
    });
    const signature = await signAuthorization(tab.payer, usdc, "ReceiveWithAuthorization", authorization);
    const { validAfter, validBefore, nonce } = authorization;
    return gasOf(
      entrypoint.depositTabRefund(usdc, nullifierHashOf(tab.note.nullifier), tab.record, tab.channelId, tab.depositSalt, { validAfter, validBefore, nonce, signature }),
    );
  };
  const restRefund = await returnToPool(spent, DEPOSIT - total);

  const unclaimed = await openTab(notes[1]!);
  const initiate = await gasOf(settlement.connect(tabKey).initiateWithdraw(unclaimed.config, DEPOSIT));
  await connection.networkHelpers.time.increase(WITHDRAW_DELAY);
  const finalize = await gasOf(settlement.connect(tabKey).finalizeWithdraw(unclaimed.config));
  const tabRefund = await returnToPool(unclaimed, DEPOSIT);
  await connection.close();

  const tabTotal = spent.openRelay + spent.openDeposit + claim + settle + claimAndRefund + restRefund;
  return {
    openRelay: spent.openRelay,
    openDeposit: spent.openDeposit,
    claim,
    settle,
    claimAndRefund,
    restRefund,
    timedWithdrawal: initiate + finalize,
    tabRefund,
    perRequest: Math.round(tabTotal / TAB_REQUESTS),
  };
}

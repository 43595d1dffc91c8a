// Gas of a private tab (docs/design.md 13) on x402's batch-settlement, our contract peer placed where @x402/evm
// expects it: the open (one relay that spends the note and deposits into the channel whose payer is the note's
// TabPayer), the seller's claim of 100 requests' cumulative voucher and its settle, the cooperative refund of the rest
// as @x402/evm's facilitator sends it (claim + refund in one multicall) and that rest's return into the pool as the
// agent's refund note, the timed withdrawal of a tab never claimed (anyone's withdrawTab, after its lifetime) and its
// deposit's return. Real Groth16 proofs, a fresh chain whose state tree holds the tab notes only (the relay's and the
// refund's tree-dependent parts grow with the pool as bench:gas's relay rows show).
import type { ContractTransactionResponse } from "ethers";
import { ZeroHash } from "ethers";
import { network } from "hardhat";
import { createLeanIMT, namePublicSignals, nullifierHashOf, type Note, type TabChannelConfig } from "../../sdk/index.js";
import { signClaimBatch, signRefund, signVoucher } from "../../test/contracts/helpers/channels.js";
import { deployedFacilitator } from "../../test/contracts/helpers/fixtures.js";
import { depositNote, secretsFor } from "../../test/contracts/helpers/notes.js";
import { proveTabOpening } from "../../test/contracts/helpers/withdrawals.js";
import { placeBatchSettlementPeer } from "../../x402-peers/batch-settlement.js";

const NOTE_VALUE = 5_000_000n;
const DEPOSIT = 1_000_000n;
const PRICE = 1_000n;
export const TAB_REQUESTS = 100;
const WITHDRAW_DELAY = 900;
const LIFETIME = 86_400;

export interface TabGas {
  /** The one relay that spends the note and deposits into the tab's channel. */
  open: number;
  /** One claim of the voucher of TAB_REQUESTS requests. */
  claim: number;
  settle: number;
  /** The rest refunded to the payer with the last claim, in one multicall (claimWithSignature + refundWithSignature). */
  claimAndRefund: number;
  /** Entrypoint.returnTab of that rest (its TabPayer deployed as a clone): it comes back into the pool as the agent's refund note. */
  restRefund: number;
  /** Entrypoint.withdrawTab twice (initiate, then finalize after the delay) for a tab its seller never claimed. */
  timedWithdrawal: number;
  /** Entrypoint.returnTab of that tab's deposit (its TabPayer already deployed). */
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
  const { settlement } = await placeBatchSettlementPeer(ethers);
  const chainId = (await ethers.provider.getNetwork()).chainId;
  const [sellerAuthorizer, tabKey] = (await ethers.getSigners()).slice(6, 8);
  if (!sellerAuthorizer || !tabKey) throw new Error("the bench needs 8 accounts");
  // A live seller and pool already hold USDC.
  for (const holder of [privacyPool, accounts.recipient]) await usdc.mint(holder, 1n);

  const notes: Note[] = [];
  for (const tag of [1n, 2n]) notes.push(await depositNote(facilitator, accounts.depositor, NOTE_VALUE, secretsFor(tag)));
  const aspTree = createLeanIMT(notes.map((note) => note.label));
  await entrypoint.updateRoot(aspTree.root, aspTree.depth, "bench-tabs");
  const stateTree = createLeanIMT(notes.map((note) => note.commitment));

  /** A tab of `note`, opened by one relay of its proof. */
  async function openTab(note: Note) {
    const origin = nullifierHashOf(note.nullifier);
    const channel: TabChannelConfig = {
      payer: await entrypoint.tabPayerOf(origin),
      payerAuthorizer: tabKey!.address,
      receiver: accounts.recipient.address,
      receiverAuthorizer: sellerAuthorizer!.address,
      token: await usdc.getAddress(),
      withdrawDelay: WITHDRAW_DELAY,
      salt: ZeroHash,
    };
    const channelId = await settlement.getChannelId(channel);
    const reclaimableAfter = BigInt((await connection.networkHelpers.time.latest()) + LIFETIME);
    const relayed = await proveTabOpening({
      note,
      withdrawnValue: DEPOSIT,
      stateTree,
      aspTree,
      opening: { channel, reclaimableAfter, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 0n },
      entrypoint: await entrypoint.getAddress(),
      scope,
    });
    const open = await gasOf(entrypoint.connect(accounts.stranger).relay(relayed.withdrawal, relayed.proof, scope, relayed.stateTreeSize));
    stateTree.insert(namePublicSignals(relayed.proof.pubSignals).newCommitment);
    const record = { channel, deposit: DEPOSIT, reclaimableAfter, refundAnchor: namePublicSignals(relayed.proof.pubSignals).refundAnchor };
    return { origin, config: channel, channelId, record, open };
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

  /** What came back to the tab's payer, into the pool as the agent's refund note (anyone's call). */
  const returnToPool = (tab: Awaited<ReturnType<typeof openTab>>) =>
    gasOf(entrypoint.connect(accounts.stranger).returnTab(usdc, tab.origin, tab.record));
  const restRefund = await returnToPool(spent);

  const unclaimed = await openTab(notes[1]!);
  const withdrawTab = () => gasOf(entrypoint.connect(accounts.stranger).withdrawTab(usdc, unclaimed.origin, unclaimed.record));
  await connection.networkHelpers.time.increaseTo(unclaimed.record.reclaimableAfter);
  const initiate = await withdrawTab();
  await connection.networkHelpers.time.increase(WITHDRAW_DELAY);
  const finalize = await withdrawTab();
  const tabRefund = await returnToPool(unclaimed);
  await connection.close();

  const tabTotal = spent.open + claim + settle + claimAndRefund + restRefund;
  return {
    open: spent.open,
    claim,
    settle,
    claimAndRefund,
    restRefund,
    timedWithdrawal: initiate + finalize,
    tabRefund,
    perRequest: Math.round(tabTotal / TAB_REQUESTS),
  };
}

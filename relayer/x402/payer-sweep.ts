import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import { hexlify, randomBytes, type Wallet } from "ethers";
import { IX402BatchSettlement__factory, TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import { RelayerError } from "../errors.js";
import type { PoolChain } from "../chain/pool-chain.js";
import {
  paymentRecordHash,
  paymentRecordOf,
  poolAuthorizationRecordOf,
  poolTransferOfLease,
  REFUNDED_RECORD,
  type PaymentRecord,
} from "../settlement/payment-record.js";
import type { PoolTransfer } from "../../sdk/x402/index.js";
import type { LeaseRecord, RelayerStore, SweepRecord } from "../store/relayer-store.js";
import { eip3009Types, type TokenDomainNames } from "../../sdk/x402/eip712-domain.js";
import { payerWallet } from "./payer-keys.js";
import { tabLeasePaymentOf, type TabLeasePayment } from "./tab-lease.js";
import { advanceIdleTabWithdrawal, DEFAULT_TAB_WITHDRAW_AFTER_SECONDS } from "./tab-withdrawal.js";
import { TokenDomainReader } from "./token-domain.js";

/** Why a sweep could not start; its message says what to do. */
export type SweepErrorCode =
  /** The relaying key may not deposit refunds (Entrypoint REFUNDER_ROLE). */
  "REFUNDER_ROLE_MISSING";

export class SweepError extends Error {
  constructor(
    readonly code: SweepErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "SweepError";
  }
}

/** A payer whose refund failed this round: its lease stays unswept, and the next round tries it again. */
export interface SweepFailure {
  nullifierHash: bigint;
  payer: string;
  /** The error's code and message: no secret, no calldata. */
  reason: string;
}

/** What one sweep did: the payers it recorded, and those that failed. */
export interface SweepRound {
  records: SweepRecord[];
  failures: SweepFailure[];
}

export interface PayerSweepDeps {
  store: RelayerStore;
  chain: PoolChain;
  payerKeySecret: string;
  /**
   * How long after a tab's deposit window the sweep takes back what nobody drained (tab-withdrawal.ts). Default
   * DEFAULT_TAB_WITHDRAW_AFTER_SECONDS.
   */
  tabWithdrawAfterSeconds?: number;
  /** Receives a line per payer: its outcome, or why it failed. */
  log?: (line: string) => void;
}

/** How long the payer's refund authorization stays usable: long enough for one transaction to be mined. */
const REFUND_AUTHORIZATION_SECONDS = 3_600;

/**
 * Turns the pool's settle-x402 authorizations that expired unused (the seller never settled, or its facilitator
 * refused) into the agent's refund notes, each of its relay's proof (Poseidon(value, refundAnchor): what came back
 * under the spent note's label, with the agent's refund precommitment; the agent finds and spends it with the secrets
 * it has). The payout never left the pool: Entrypoint.refundAuthorization, which anyone may call and which needs no
 * key of the operator's, checks the transfer and anchor against the pool's record, after validBefore, while the token
 * says the authorization was never used, once. A crash between steps loses nothing: a rerun finds the refund recorded.
 *
 * A private tab's payer (open-tab) whose deposit was made is swept once the rest of the payout, less the seller's
 * claims, is back at the payer (the seller's refund, or the payer side's withdrawal after the delay): it comes back as
 * the agent's refund note (Entrypoint.depositTabRefund). Until then it is left for a later round, until
 * `tabWithdrawAfterSeconds` after its deposit's window: then the payer takes it back by the channel's timed withdrawal
 * (tab-withdrawal.ts), and the round that finalizes it returns it. What the channel holds beyond that (a stranger's
 * deposit, made to keep the channel from ever being empty) is not waited for. A tab whose seller claimed the whole
 * payout is recorded `used`.
 */
export async function sweepExpiredPayers(deps: PayerSweepDeps): Promise<SweepRound> {
  const { store, chain } = deps;
  const latest = await chain.call(() => chain.provider.getBlock("latest"));
  if (latest === null) throw new Error("the chain has no latest block");
  // The chain's clock decides whether a seller can still use an authorization: block.timestamp < validBefore.
  const leases = await store.expiredUnsweptLeases(latest.timestamp);
  // Only a tab's payer needs the role: anyone may return the pool's own authorizations.
  if (leases.some((lease) => poolTransferOfLease(lease, chain.deployment.privacyPool) === undefined)) await assertRefunder(chain);
  const token = new TokenDomainReader(chain);
  const round: SweepRound = { records: [], failures: [] };
  // One lease that cannot be refunded (a row the chain contradicts, a payer under a rotated PAYER_KEY_SECRET) is
  // reported and left for the next round; it never holds back the leases after it.
  for (const lease of leases) {
    let record: SweepRecord | undefined;
    try {
      record = await sweepPayerOrNoteRace(deps, token, lease, latest.timestamp);
      if (record === undefined) continue;
      await store.recordSweep(record);
    } catch (error) {
      const failure = { nullifierHash: lease.nullifierHash, payer: lease.recipient, reason: reasonOf(error) };
      deps.log?.(`${failure.payer}: failed (nullifier hash ${failure.nullifierHash}): ${failure.reason}`);
      round.failures.push(failure);
      continue;
    }
    deps.log?.(`${record.payer}: ${record.outcome} ${record.amount}${record.depositTxHash === null ? "" : ` in ${record.depositTxHash}`}`);
    round.records.push(record);
  }
  return round;
}

/**
 * How many settled payers wait for a sweep now: their authorization expired by the chain's clock. A tab's payer whose
 * rest is not back from its channel waits for the tab, not for the sweep, and is not counted until the sweep is to
 * take it back (`tabWithdrawAfterSeconds` after its deposit's window).
 */
export async function expiredPayersWaiting({ store, chain, tabWithdrawAfterSeconds = DEFAULT_TAB_WITHDRAW_AFTER_SECONDS }: Pick<PayerSweepDeps, "store" | "chain" | "tabWithdrawAfterSeconds">): Promise<number> {
  const latest = await chain.call(() => chain.provider.getBlock("latest"));
  if (latest === null) throw new Error("the chain has no latest block");
  const leases = await store.expiredUnsweptLeases(latest.timestamp);
  const openTabs = await Promise.all(leases.map((lease) => tabStillOpen(chain, lease, latest.timestamp - tabWithdrawAfterSeconds)));
  return openTabs.filter((open) => !open).length;
}

/** Whether `lease` funded a tab whose deposit was made, whose rest is not back at its payer, and whose deposit window closed after `openSince`. */
async function tabStillOpen(chain: PoolChain, lease: LeaseRecord, openSince: number): Promise<boolean> {
  const tab = lease.payment === null ? undefined : tabLeasePaymentOf(lease.payment.xPayment);
  if (tab === undefined || lease.payment!.validBefore <= openSince) return false;
  const usdc = TestUSDC__factory.connect(chain.deployment.usdc, chain.provider);
  if (!(await chain.call(() => usdc.authorizationState(lease.recipient, lease.payment!.nonce)))) return false;
  const payerHolds = await chain.call(() => usdc.balanceOf(lease.recipient));
  return restOf(await tabChannel(chain, tab), lease.gross - lease.fee, payerHolds) === "open";
}

/**
 * sweepPayer, where a refund the pool refused because the payment was refunded meanwhile is the refund of another
 * sweeper (`npm run sweep:payers` beside the relayer's schedule, a relayer on a store of its own): it read the pool
 * before that refund was mined and sent its own, which the pool refused (OriginAlreadyRefunded). Recorded as the
 * other sweeper's refund; anything else is rethrown.
 */
async function sweepPayerOrNoteRace(deps: PayerSweepDeps, token: TokenDomainReader, lease: LeaseRecord, now: number): Promise<SweepRecord | undefined> {
  try {
    return await sweepPayer(deps, token, lease, now);
  } catch (error) {
    const refunded = await refundedOnChain(deps, lease).catch(() => undefined);
    if (refunded === undefined) throw error;
    return refunded;
  }
}

/** earlierRefund, when the pool marks the lease's payment refunded; undefined when it does not. */
async function refundedOnChain(deps: PayerSweepDeps, lease: LeaseRecord): Promise<SweepRecord | undefined> {
  const { chain } = deps;
  if ((await chain.call(() => chain.pool.spendRecordOf(lease.nullifierHash))) !== REFUNDED_RECORD) return undefined;
  return earlierRefund(deps, lease);
}

/** The deposited record of a lease whose payment some sweep (this one earlier, or another sweeper) refunded. */
async function earlierRefund({ chain, payerKeySecret }: PayerSweepDeps, lease: LeaseRecord): Promise<SweepRecord> {
  const { privacyPool } = chain.deployment;
  const payer = poolTransferOfLease(lease, privacyPool) === undefined ? payerWallet(payerKeySecret, lease.nullifierHash).address : privacyPool;
  const earlier = await refundDepositOf(chain, payer, lease.nullifierHash);
  return { nullifierHash: lease.nullifierHash, payer, amount: earlier.value, outcome: "deposited", depositTxHash: earlier.txHash, sweptAt: new Date().toISOString() };
}

/** An error as a log line may carry it: the code and message of a typed error, never a request or calldata. */
function reasonOf(error: unknown): string {
  if (error instanceof RelayerError || error instanceof SweepError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** A lease's payer swept: its record, or undefined while it is a tab's whose channel still holds unclaimed money. */
async function sweepPayer(deps: PayerSweepDeps, token: TokenDomainReader, lease: LeaseRecord, now: number): Promise<SweepRecord | undefined> {
  const { chain } = deps;
  const poolTransfer = poolTransferOfLease(lease, chain.deployment.privacyPool);
  if (poolTransfer !== undefined) return returnPoolAuthorization(deps, token, lease, poolTransfer);
  const payer = payerWallet(deps.payerKeySecret, lease.nullifierHash);
  if (payer.address !== lease.recipient || lease.payment === null) {
    throw new Error(
      `lease ${lease.nullifierHash} is not a settled tab lease of this PAYER_KEY_SECRET's payers (one settled under an earlier secret is swept by npm run sweep:payers with that secret)`,
    );
  }
  const record = sweepRecordFor(lease, payer.address);

  const recorded = await chain.call(() => chain.pool.spendRecordOf(lease.nullifierHash));
  if (recorded === REFUNDED_RECORD) return earlierRefund(deps, lease);
  const payment = paymentOf(lease, recorded);
  if (payment === null) return record("not-recorded");
  const usdc = TestUSDC__factory.connect(chain.deployment.usdc, chain.provider);
  // A used authorization funded its seller; for a tab, its channel, which may give the rest back.
  const used = await chain.call(() => usdc.authorizationState(payment.payer, payment.nonce));
  const tab = used ? tabLeasePaymentOf(lease.payment.xPayment) : undefined;
  if (used && tab === undefined) return record("used");
  let value = payment.amount;
  if (tab !== undefined) {
    const restNow = async () => {
      const channel = await tabChannel(chain, tab);
      return { channel, rest: restOf(channel, payment.amount, await chain.call(() => usdc.balanceOf(payment.payer))) };
    };
    let { channel, rest } = await restNow();
    if (rest === "open") {
      const withdrawAfterSeconds = deps.tabWithdrawAfterSeconds ?? DEFAULT_TAB_WITHDRAW_AFTER_SECONDS;
      const step = await advanceIdleTabWithdrawal(chain, payer, tab, { unclaimed: channel.balance - channel.totalClaimed, now, withdrawAfterSeconds });
      if (step !== undefined) deps.log?.(`${payer.address}: the tab's withdrawal ${step}`);
      if (step !== "finalized") return undefined;
      // The withdrawal paid the payer: what is back now.
      ({ channel, rest } = await restNow());
    }
    if (rest === "open") return undefined;
    if (rest === "claimed") return record("used");
    value = rest;
  }

  const authorization = await refundAuthorization(chain, await token.read(), payer, value, now);
  const { usdc: asset } = chain.deployment;
  const data =
    tab === undefined
      ? chain.entrypoint.interface.encodeFunctionData("depositRefund", [asset, lease.nullifierHash, payment, authorization])
      : chain.entrypoint.interface.encodeFunctionData("depositTabRefund", [
          asset,
          lease.nullifierHash,
          payment,
          tab.channelId,
          BigInt(tab.deposit.authorization.erc3009Authorization.salt),
          authorization,
        ]);
  const sent = await chain.sendFromRelayer({ to: chain.deployment.entrypoint, data });
  const receipt = await chain.call(() => sent.wait());
  if (receipt === null || receipt.status !== 1) throw new Error(`refund transaction ${sent.hash} of payer ${payer.address} reverted`);
  return record("deposited", value, receipt.hash);
}

/** What the sweep records of `lease`, whose payment `payer` made, once it knows the outcome. */
function sweepRecordFor(lease: LeaseRecord, payer: string) {
  return (outcome: SweepRecord["outcome"], amount = 0n, depositTxHash: string | null = null): SweepRecord => ({
    nullifierHash: lease.nullifierHash,
    payer,
    amount,
    outcome,
    depositTxHash,
    sweptAt: new Date().toISOString(),
  });
}

/**
 * A settle-x402 lease's authorization once its window closed: `used` when the seller took it, else returned as the
 * agent's refund note by Entrypoint.refundAuthorization (the relaying key only pays the gas); `not-recorded` when the
 * pool records no such authorization of the note (it was spent by another transaction).
 */
async function returnPoolAuthorization(deps: PayerSweepDeps, token: TokenDomainReader, lease: LeaseRecord, transfer: PoolTransfer): Promise<SweepRecord> {
  const { chain } = deps;
  const { privacyPool: pool, usdc: asset } = chain.deployment;
  const record = sweepRecordFor(lease, pool);
  const recorded = await chain.call(() => chain.pool.spendRecordOf(lease.nullifierHash));
  if (recorded === REFUNDED_RECORD) return earlierRefund(deps, lease);
  const expected = poolAuthorizationRecordOf(lease, { pool, separator: (await token.read()).separator });
  if (expected === undefined) throw new Error(`lease ${lease.nullifierHash} stored no refund anchor; return its authorization by hand (Entrypoint.refundAuthorization)`);
  if (recorded !== expected) return record("not-recorded");
  const usdc = TestUSDC__factory.connect(asset, chain.provider);
  if (await chain.call(() => usdc.authorizationState(pool, transfer.nonce))) return record("used");
  const { payTo, value, validAfter, validBefore } = transfer;
  const data = chain.entrypoint.interface.encodeFunctionData("refundAuthorization", [
    asset,
    lease.nullifierHash,
    { payTo, value, validAfter, validBefore },
    lease.payment!.refundAnchor!,
  ]);
  const sent = await chain.sendFromRelayer({ to: chain.deployment.entrypoint, data });
  const receipt = await chain.call(() => sent.wait());
  if (receipt === null || receipt.status !== 1) throw new Error(`refund transaction ${sent.hash} of the pool's authorization of note ${lease.nullifierHash} reverted`);
  return record("deposited", value, receipt.hash);
}

/**
 * The payment the pool recorded for the lease's relay (IEntrypoint.PaymentRecord), built from what the lease stored
 * before the relay left and checked against `recorded`, the pool's record; null when the chain records no such payment
 * (the note was spent by another transaction, or paid no payer). Whoever sent the relay, and however, it recorded
 * exactly this.
 */
function paymentOf(lease: LeaseRecord, recorded: string): PaymentRecord | null {
  const payment = paymentRecordOf(lease);
  if (payment === undefined) {
    throw new Error(
      `lease ${lease.nullifierHash} was made before leases stored their refund anchor; refund its payer by hand (Entrypoint.depositRefund with the relay's PaymentRecord)`,
    );
  }
  return recorded === paymentRecordHash(payment) ? payment : null;
}

/** What a tab's channel holds and what its seller claimed of it, as x402BatchSettlement reads now. */
async function tabChannel(chain: PoolChain, tab: TabLeasePayment): Promise<{ balance: bigint; totalClaimed: bigint }> {
  const settlement = IX402BatchSettlement__factory.connect(BATCH_SETTLEMENT_ADDRESS, chain.provider);
  const [balance, totalClaimed] = await chain.call(() => settlement.channels(tab.channelId));
  return { balance, totalClaimed };
}

/**
 * What a tab's channel gave back of the `payout`: the payout less the seller's claims, once the payer holds it
 * (`payerHolds`, as depositTabRefund requires). "open" while it is not back, "claimed" when the seller claimed the
 * whole payout. What the channel holds beyond the claims does not matter: a stranger's deposit there holds nothing back.
 */
function restOf({ totalClaimed }: { totalClaimed: bigint }, payout: bigint, payerHolds: bigint): bigint | "claimed" | "open" {
  if (totalClaimed >= payout) return "claimed";
  const rest = payout - totalClaimed;
  return payerHolds >= rest ? rest : "open";
}

async function assertRefunder(chain: PoolChain): Promise<void> {
  const { entrypoint, relayer } = chain;
  const role = await chain.call(() => entrypoint.REFUNDER_ROLE());
  if (!(await chain.call(() => entrypoint.hasRole(role, relayer.address)))) {
    throw new SweepError(
      "REFUNDER_ROLE_MISSING",
      `The relaying key ${relayer.address} (RELAYER_PRIVATE_KEY) lacks REFUNDER_ROLE on the entrypoint ${chain.deployment.entrypoint}, so no refund can be deposited; nothing was moved. ` +
        `Grant it from the deployer (Entrypoint.grantRole(REFUNDER_ROLE, ${relayer.address})), or sweep with a key that holds it.`,
    );
  }
}

/** The payer's ReceiveWithAuthorization of `value` to the entrypoint, under the token's EIP-712 domain. */
async function refundAuthorization(chain: PoolChain, { name, version }: TokenDomainNames, payer: Wallet, value: bigint, now: number) {
  const domain = { name, version, chainId: chain.deployment.chainId, verifyingContract: chain.deployment.usdc };
  const authorization = {
    from: payer.address,
    to: chain.deployment.entrypoint,
    value,
    validAfter: 0n,
    validBefore: BigInt(now + REFUND_AUTHORIZATION_SECONDS),
    nonce: hexlify(randomBytes(32)),
  };
  const signature = await payer.signTypedData(domain, eip3009Types("ReceiveWithAuthorization"), authorization);
  const { validAfter, validBefore, nonce } = authorization;
  return { validAfter, validBefore, nonce, signature };
}

/** The refund a previous sweep made of the payment of `payer`, whose origin's slot says REFUNDED. */
async function refundDepositOf(chain: PoolChain, payer: string, originNullifierHash: bigint) {
  const events = await chain.call(() => chain.entrypoint.queryFilter(chain.entrypoint.filters.RefundDeposited(payer)));
  const refund = events.find((event) => event.args.originNullifierHash === originNullifierHash);
  if (refund === undefined) throw new Error(`the pool marks the payment of ${payer} refunded, but no RefundDeposited names it`);
  return { value: refund.args.value, txHash: refund.transactionHash };
}

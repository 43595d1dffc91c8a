import type { TabRecord } from "../../sdk/index.js";
import type { PoolTransfer } from "../../sdk/x402/index.js";
import { TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import { poolAuthorizationRecordOf, poolTransferOfLease, REFUNDED_RECORD, tabRecordHash, tabRecordOf } from "../settlement/payment-record.js";
import type { LeaseRecord, RelayerStore, SweepRecord } from "../store/relayer-store.js";
import { advanceTabWithdrawal, tabChannel, tabWithdrawalWaiting } from "./tab-withdrawal.js";
import { TokenDomainReader } from "./token-domain.js";

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
  /** Receives a line per payer: its outcome, or why it failed. */
  log?: (line: string) => void;
}

/**
 * Turns what the pool paid and nobody took into the agent's refund notes, each of its relay's proof (Poseidon(value,
 * refundAnchor): what came back under the spent note's label, with the agent's refund precommitment; the agent finds
 * and spends it with the secrets it has). Every call it makes is one anyone may make: the relaying key only pays gas,
 * and no key of the operator's holds or signs the money.
 *
 * A settle-x402 authorization that expired unused (the seller never settled, or its facilitator refused) never left
 * the pool: Entrypoint.refundAuthorization checks the transfer and anchor against the pool's record, after
 * validBefore, while the token says the authorization was never used, once.
 *
 * A private tab (open-tab) is returned once what its seller did not claim is back at the tab's payer (the seller's
 * refund, or a withdrawal by the tab's key): Entrypoint.returnTab. Until then it is left for a later round, until the
 * tab's lifetime ends (its proof's reclaimableAfter): then the sweep takes it back by the channel's timed withdrawal
 * (Entrypoint.withdrawTab, tab-withdrawal.ts), and the round that finalizes it returns it. What the channel holds beyond
 * that (a stranger's deposit, made to keep the channel from ever being empty) is not waited for. A tab whose seller
 * claimed the whole deposit is recorded `used`. A crash between steps loses nothing: a rerun finds the refund recorded.
 */
export async function sweepExpiredPayers(deps: PayerSweepDeps): Promise<SweepRound> {
  const { store, chain } = deps;
  const latest = await chain.call(() => chain.provider.getBlock("latest"));
  if (latest === null) throw new Error("the chain has no latest block");
  // The chain's clock decides whether a seller can still use an authorization: block.timestamp < validBefore.
  const leases = await store.expiredUnsweptLeases(latest.timestamp);
  const token = new TokenDomainReader(chain);
  const round: SweepRound = { records: [], failures: [] };
  // One lease that cannot be refunded (a row the chain contradicts, one stored without its refund anchor) is reported
  // and left for the next round; it never holds back the leases after it.
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
 * How many settled payments wait for a sweep now: their authorization expired by the chain's clock, or their tab can
 * be returned or taken back. A tab whose rest is not back from its channel waits for the tab, not for the sweep, and
 * is not counted while its lifetime lasts or while its timed withdrawal waits out the channel's delay.
 */
export async function expiredPayersWaiting({ store, chain }: Pick<PayerSweepDeps, "store" | "chain">): Promise<number> {
  const latest = await chain.call(() => chain.provider.getBlock("latest"));
  if (latest === null) throw new Error("the chain has no latest block");
  const leases = await store.expiredUnsweptLeases(latest.timestamp);
  const openTabs = await Promise.all(leases.map((lease) => tabStillOpen(chain, lease, latest.timestamp)));
  return openTabs.filter((open) => !open).length;
}

/**
 * Whether `lease` opened a tab whose rest is not back at its payer and that nobody can take back at `now`: within its
 * lifetime, or its timed withdrawal within the channel's delay.
 */
async function tabStillOpen(chain: PoolChain, lease: LeaseRecord, now: number): Promise<boolean> {
  const tab = tabRecordOf(lease);
  if (tab === undefined || (await tabRestNow(chain, lease.recipient, tab)) !== "open") return false;
  return BigInt(now) < tab.reclaimableAfter || (await tabWithdrawalWaiting(chain, tab, now));
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
async function earlierRefund({ chain }: PayerSweepDeps, lease: LeaseRecord): Promise<SweepRecord> {
  // RefundDeposited names the pool for its own authorizations and the TabPayer (the lease's recipient) for a tab.
  const payer = tabRecordOf(lease) === undefined ? chain.deployment.privacyPool : lease.recipient;
  const earlier = await refundDepositOf(chain, payer, lease.nullifierHash);
  return { nullifierHash: lease.nullifierHash, payer, amount: earlier.value, outcome: "deposited", depositTxHash: earlier.txHash, sweptAt: new Date().toISOString() };
}

/** An error as a log line may carry it: the code and message of a typed error, never a request or calldata. */
function reasonOf(error: unknown): string {
  if (error instanceof RelayerError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** A lease's payment swept: its record, or undefined while it is a tab whose rest is not back yet. */
async function sweepPayer(deps: PayerSweepDeps, token: TokenDomainReader, lease: LeaseRecord, now: number): Promise<SweepRecord | undefined> {
  const poolTransfer = poolTransferOfLease(lease, deps.chain.deployment.privacyPool);
  if (poolTransfer !== undefined) return returnPoolAuthorization(deps, token, lease, poolTransfer);
  return returnTab(deps, lease, now);
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
 * An open-tab lease's tab: `used` when its seller claimed the whole deposit; returned as the agent's refund note by
 * Entrypoint.returnTab once the rest is back at the tab's payer; after the tab's lifetime, taken back first by
 * Entrypoint.withdrawTab (tab-withdrawal.ts); `not-recorded` when the pool records no such tab of the note.
 */
async function returnTab(deps: PayerSweepDeps, lease: LeaseRecord, now: number): Promise<SweepRecord | undefined> {
  const { chain } = deps;
  const tab = tabRecordOf(lease);
  if (tab === undefined) throw new Error(`lease ${lease.nullifierHash} pays neither a pool authorization nor a tab it stored whole; return it by hand`);
  const payer = lease.recipient;
  const record = sweepRecordFor(lease, payer);
  const recorded = await chain.call(() => chain.pool.spendRecordOf(lease.nullifierHash));
  if (recorded === REFUNDED_RECORD) return earlierRefund(deps, lease);
  if (recorded !== tabRecordHash(tab)) return record("not-recorded");
  let rest = await tabRestNow(chain, payer, tab);
  if (rest === "open") {
    const step = await advanceTabWithdrawal(chain, lease.nullifierHash, tab, now);
    if (step !== undefined) deps.log?.(`${payer}: the tab's withdrawal ${step}`);
    if (step !== "finalized") return undefined;
    // The withdrawal paid the tab's payer: what is back now.
    rest = await tabRestNow(chain, payer, tab);
    if (rest === "open") return undefined;
  }
  if (rest === "claimed") return record("used");
  const data = chain.entrypoint.interface.encodeFunctionData("returnTab", [chain.deployment.usdc, lease.nullifierHash, tab]);
  const sent = await chain.sendFromRelayer({ to: chain.deployment.entrypoint, data });
  const receipt = await chain.call(() => sent.wait());
  if (receipt === null || receipt.status !== 1) throw new Error(`returnTab transaction ${sent.hash} of the tab of note ${lease.nullifierHash} reverted`);
  return record("deposited", rest, receipt.hash);
}

/**
 * What a tab's channel gave back of its deposit: the deposit less the seller's claims, once the tab's payer holds it
 * (as returnTab requires). "open" while it is not back, "claimed" when the seller claimed the whole deposit. What the
 * channel holds beyond the claims does not matter: a stranger's deposit there holds nothing back.
 */
async function tabRestNow(chain: PoolChain, payer: string, tab: TabRecord): Promise<bigint | "claimed" | "open"> {
  const { totalClaimed } = await tabChannel(chain, tab.channel);
  if (totalClaimed >= tab.deposit) return "claimed";
  const rest = tab.deposit - totalClaimed;
  const usdc = TestUSDC__factory.connect(chain.deployment.usdc, chain.provider);
  return (await chain.call(() => usdc.balanceOf(payer))) >= rest ? rest : "open";
}

/** The refund a previous sweep made of the payment of `payer`, whose origin's slot says REFUNDED. */
async function refundDepositOf(chain: PoolChain, payer: string, originNullifierHash: bigint) {
  const events = await chain.call(() => chain.entrypoint.queryFilter(chain.entrypoint.filters.RefundDeposited(payer)));
  const refund = events.find((event) => event.args.originNullifierHash === originNullifierHash);
  if (refund === undefined) throw new Error(`the pool marks the payment of ${payer} refunded, but no RefundDeposited names it`);
  return { value: refund.args.value, txHash: refund.transactionHash };
}

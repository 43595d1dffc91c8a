import { createHash, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { IndexerClient } from "../../indexer/client.js";
import type { Logger } from "pino";
import { RelayRevertedError, uncertain, type PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import type { Faults } from "../ops/faults.js";
import { feeOf } from "../pricing/pricing.js";
import type { LeaseRecord, LeaseState, RelayerStore, SignedPayment } from "../store/relayer-store.js";
import { TokenDomainReader } from "../x402/token-domain.js";
import { poolTransferOfLease, recordsLease, tabRecordOf } from "./payment-record.js";
import { refundAnchorOfSpend, spendRecord } from "./spend.js";
import type { PoolWithdrawer, WithdrawalOrder, WithdrawalOutcome } from "./withdrawal.js";

export interface LeasedWithdrawalOrder extends Omit<WithdrawalOrder, "hooks"> {
  /**
   * What else a retry must repeat to be answered from this lease (the route's kind and terms that are not the
   * note, e.g. the seller's network and amount). The recipient, amount, fee and change commitment are always pinned.
   */
  terms: readonly (string | bigint | number)[];
  /**
   * Refusals that depend on the moment (the fee floor follows the gas price), run only when a new lease is taken:
   * a retry of a settled or uncertain spend is answered from its lease whatever they would say now.
   */
  preflight?: () => Promise<void>;
  /**
   * settle-x402 and open-tab: builds the payment the seller takes (docs/api.md 3.2 step 1), given the proof's refund
   * anchor, run only when a new lease is taken. The lease stores it with that anchor: with the lease's terms, the
   * whole record the relay makes the pool keep, and what the relay's data is built from.
   */
  buildPayment?: (refundAnchor: bigint) => Promise<SignedPayment>;
}

/** A settled lease, and whether it was answered from an earlier request instead of withdrawing now. */
export interface LeasedWithdrawal {
  lease: LeaseRecord;
  replayed: boolean;
}

export interface LeaseTiming {
  /** How long a duplicate request waits for the lease holder before answering in-progress or uncertain. */
  waitForLeaseMs: number;
  /**
   * A reserved lease whose holder's heartbeat (every third of this) stopped this long, nullifier unspent, was
   * abandoned (its holder died) and is freed; a withdrawing one whose transaction the node has not known for this
   * long was dropped.
   */
  staleLeaseMs: number;
  pollMs: number;
}

export const DEFAULT_LEASE_TIMING: LeaseTiming = { waitForLeaseMs: 60_000, staleLeaseMs: 120_000, pollMs: 250 };

export interface LeasedWithdrawalsDeps {
  store: RelayerStore;
  withdrawer: PoolWithdrawer;
  chain: PoolChain;
  indexer: IndexerClient;
  faults: Faults;
  timing?: LeaseTiming;
  /** Told each time a request takes a lease and withdraws under it (a proof follows), so takeovers show. */
  logger?: Pick<Logger, "info">;
}

/**
 * How many leases a request looks at or takes before giving up: one abandoned or failed lease freed, one
 * reservation lost to a concurrent request, one of its own that someone else's spend ended, and one more.
 */
const MAX_RESERVE_ATTEMPTS = 4;

/** The heartbeat's floor, whatever the stale time (a stale time of 0 must not spin the database). */
const MIN_HEARTBEAT_MS = 100;

/** Thrown from the relay's onSigned hook when this request's reservation was freed and taken by another one. */
class LeaseTakenOver extends Error {}

/** What the chain says of an open lease. */
type ChainVerdict =
  /** A relay that paid exactly this lease (recipient, amount, nullifier, change note) is mined: this one or a copy of it. */
  | { kind: "paid"; txHash: string }
  /** Another transaction spent the note: nothing of this lease left the pool. */
  | { kind: "spent-elsewhere"; txHash: string }
  /** The note is unspent and this lease's transaction reverted, was dropped, or was never sent by a dead holder. */
  | { kind: "nothing-spent" };

/**
 * Every spend of a note goes through a lease per nullifier hash (docs/api.md 3.2, docs/design.md 7): reserve, withdraw,
 * finalize. Of concurrent requests for one note exactly one withdraws; a retry of the same request replays the
 * settled lease; a lease whose outcome is unknown is resolved from the chain, never reported unspent. Every
 * transition names the reservation's token, so a request acting on an old snapshot can never move a newer
 * reservation (docs/relayer.md draws the state machine).
 */
export class LeasedWithdrawals {
  private readonly timing: LeaseTiming;
  private readonly token: TokenDomainReader;

  constructor(private readonly deps: LeasedWithdrawalsDeps) {
    this.timing = deps.timing ?? DEFAULT_LEASE_TIMING;
    this.token = new TokenDomainReader(deps.chain);
  }

  async withdraw(order: LeasedWithdrawalOrder): Promise<LeasedWithdrawal> {
    const { store, faults } = this.deps;
    const { nullifierHash, changeCommitment, remainingValue } = spendRecord(order.spend, order.amount);
    const terms = [...order.terms, order.recipient.toLowerCase(), order.amount, order.feeBps, changeCommitment];
    const fingerprint = createHash("sha256").update(terms.map(String).join("|")).digest("hex");
    /** The reservation this request took, if any: a lease settled under it was withdrawn by this request. */
    let ownToken: string | undefined;

    for (let attempt = 0; attempt < MAX_RESERVE_ATTEMPTS; attempt++) {
      const existing = await store.getLease(nullifierHash);
      if (existing !== undefined && existing.state !== "failed") {
        const resolved = await this.answerExisting(existing, fingerprint);
        if (resolved !== undefined) return { lease: resolved, replayed: resolved.token !== ownToken };
        continue;
      }
      await order.preflight?.();
      const refundAnchor = refundAnchorOfSpend(order.spend);
      const signed = await order.buildPayment?.(refundAnchor);
      const payment = signed === undefined ? null : { ...signed, refundAnchor };
      faults.at("before-reserve");
      const lease: LeaseRecord = {
        nullifierHash,
        state: "reserved",
        token: randomUUID(),
        fingerprint,
        recipient: order.recipient,
        gross: order.amount,
        fee: feeOf(order.amount, order.feeBps),
        changeCommitment,
        remainingValue,
        fundingTxHash: existing?.fundingTxHash ?? null,
        proofTimeMs: null,
        payment,
        updatedAt: new Date().toISOString(),
      };
      if (!(await store.reserveLease(lease))) continue;
      ownToken = lease.token;
      const settled = await this.run(lease, order);
      if (settled !== undefined) return { lease: settled, replayed: false };
      // Taken over, or the note was spent meanwhile: the next round answers from the lease as it stands now.
    }
    throw new RelayerError("SETTLEMENT_IN_PROGRESS", "Other requests keep taking this note's lease; retry the same request shortly.", {}, undefined, 1);
  }

  /**
   * Throws when this relayer holds a live lease on the note: ALREADY_SPENT once settled, SETTLEMENT_IN_PROGRESS while
   * open. What verify asks before saying a note can pay, since the chain does not show a spend in flight.
   */
  async assertNotLeased(nullifierHash: bigint): Promise<void> {
    const lease = await this.deps.store.getLease(nullifierHash);
    if (lease === undefined || lease.state === "failed") return;
    if (lease.state === "settled") {
      throw new RelayerError("ALREADY_SPENT", "The note was spent by an earlier settlement. Use its nextDeposit.");
    }
    throw new RelayerError("SETTLEMENT_IN_PROGRESS", "A settlement of this note is in progress; it cannot pay anything else.", { state: "in-progress" });
  }

  /**
   * Steps 3 and 4: withdraw under the reservation `lease`, then finalize it. Undefined when the reservation was
   * taken over or the note turned out spent: the caller answers from the lease as it now stands.
   */
  private async run(lease: LeaseRecord, order: WithdrawalOrder): Promise<LeaseRecord | undefined> {
    const { store, withdrawer, faults, logger } = this.deps;
    const { nullifierHash, token } = lease;
    faults.at("after-reserve");
    logger?.info("lease taken; proving and relaying the withdrawal");
    // The holder's heartbeat: a lease kept fresh is never taken for abandoned, however long the proof queues.
    const heartbeat = setInterval(() => {
      store.advanceLease(nullifierHash, token, "reserved", "reserved").catch(() => false);
    }, Math.max(this.timing.staleLeaseMs / 3, MIN_HEARTBEAT_MS)).unref();
    let signedHash: string | undefined;
    let outcome: WithdrawalOutcome;
    try {
      outcome = await withdrawer.withdraw({
        ...order,
        ...this.relayPaymentOf(lease),
        hooks: {
          onSigned: async (txHash) => {
            // Recorded before it leaves, in the same step that checks the reservation is still this request's.
            if (!(await store.advanceLease(nullifierHash, token, "reserved", "withdrawing", { fundingTxHash: txHash }))) {
              throw new LeaseTakenOver();
            }
            signedHash = txHash;
          },
          onSent: async () => faults.at("after-send"),
        },
      });
    } catch (error) {
      return this.afterFailure(lease, signedHash, error);
    } finally {
      clearInterval(heartbeat);
    }
    faults.at("after-mined");
    const proofTimeMs = outcome.proofTimeMs ?? undefined;
    const settled: LeaseRecord = { ...lease, state: "settled", fundingTxHash: outcome.txHash, proofTimeMs: outcome.proofTimeMs };
    // A false answer means another request resolved this lease from the chain first, which can only have found
    // this very transaction, mined and paying the lease: the settlement stands either way.
    await store
      .advanceLease(nullifierHash, token, "withdrawing", "settled", { fundingTxHash: outcome.txHash, proofTimeMs })
      .catch(() => {
        throw unrecorded(outcome.txHash);
      });
    return settled;
  }

  /**
   * After a withdrawal under `lease` failed, what is known decides the answer. Its relay mined and reverted: the
   * chain says who, if anyone, spent the note. Taken over, or the note found spent before sending: undefined, for
   * the caller to answer from the lease as it stands. Once signed, the relay may be on chain: SETTLEMENT_UNCERTAIN
   * with its hash. Before that nothing left: the lease is released and the error stands (503s say nothing was spent).
   */
  private async afterFailure(lease: LeaseRecord, signedHash: string | undefined, error: unknown): Promise<LeaseRecord | undefined> {
    if (error instanceof RelayRevertedError) {
      return this.awaitResolution({ ...lease, state: "withdrawing", fundingTxHash: error.txHash });
    }
    if (error instanceof LeaseTakenOver) return undefined;
    if (error instanceof RelayerError && error.code === "ALREADY_SPENT") return undefined;
    if (signedHash !== undefined) {
      throw error instanceof RelayerError && error.code === "SETTLEMENT_UNCERTAIN" ? error : uncertain(signedHash, error);
    }
    // A release the store refuses leaves the lease to go stale; the error of the withdrawal is the answer.
    await this.deps.store.advanceLease(lease.nullifierHash, lease.token, "reserved", "failed").catch(() => false);
    throw error;
  }

  /** Replays a settled lease of the same request, waits for a live one, or refuses a different request. */
  private async answerExisting(lease: LeaseRecord, fingerprint: string): Promise<LeaseRecord | undefined> {
    if (lease.fingerprint !== fingerprint) {
      if (lease.state === "settled") {
        throw new RelayerError("ALREADY_SPENT", "The note was spent by an earlier request with other terms. Use the nextDeposit of that settlement.");
      }
      throw new RelayerError(
        "SETTLEMENT_IN_PROGRESS",
        "Another request with other terms is settling this note. Wait for it and use its nextDeposit.",
        { state: "in-progress" },
        undefined,
        1,
      );
    }
    return this.awaitResolution(lease);
  }

  /**
   * The settled lease, or undefined when it ended failed (the caller may take it); throws when still open, and
   * ALREADY_SPENT when another transaction spent the note. A store that stops answering while waiting leaves the
   * lease as last seen: open, so the answer is the open lease's.
   */
  private async awaitResolution(initial: LeaseRecord): Promise<LeaseRecord | undefined> {
    const deadline = Date.now() + this.timing.waitForLeaseMs;
    let lease = initial;
    try {
      for (;;) {
        if (lease.state === "settled") return lease;
        if (lease.state === "failed") return undefined;
        const resolved = await this.resolveFromChain(lease);
        if (resolved !== undefined) return resolved.state === "settled" ? resolved : undefined;
        if (Date.now() >= deadline) throw stillOpen(lease);
        await sleep(this.timing.pollMs);
        lease = (await this.deps.store.getLease(lease.nullifierHash)) ?? lease;
      }
    } catch (error) {
      if (error instanceof RelayerError && error.code === "STORE_UNAVAILABLE") throw stillOpen(lease);
      throw error;
    }
  }

  /**
   * Moves an open lease as the chain says: settled by the relay that paid it, failed when nothing of it was spent;
   * ALREADY_SPENT (after failing it) when another transaction spent the note. Undefined while unknown, or while
   * the RPC or the indexer cannot answer.
   */
  private async resolveFromChain(lease: LeaseRecord): Promise<LeaseRecord | undefined> {
    const verdict = await this.readChain(lease).catch(() => undefined);
    switch (verdict?.kind) {
      case undefined:
        return undefined;
      case "paid":
        await this.moveOpenLease(lease, "settled", { fundingTxHash: verdict.txHash });
        return { ...lease, state: "settled", fundingTxHash: verdict.txHash };
      case "nothing-spent":
        await this.moveOpenLease(lease, "failed");
        return { ...lease, state: "failed" };
      case "spent-elsewhere":
        await this.moveOpenLease(lease, "failed");
        throw new RelayerError(
          "ALREADY_SPENT",
          `The note was spent by transaction ${verdict.txHash}, which is not this request's withdrawal (another request, or the note's holder). Use the nextDeposit of that spend.`,
        );
    }
  }

  /**
   * A withdrawing lease is judged by its own transaction first: mined and paying it settles it; pending, or just
   * signed and on its way (younger than the stale time), leaves it open. Then by the nullifier: spent, it is
   * traced to the transaction that spent it (ours, say a copy of our calldata mined first, or someone else's);
   * unspent, a withdrawing lease failed (its transaction reverted or was dropped) and a reserved one only once stale.
   */
  private async readChain(lease: LeaseRecord): Promise<ChainVerdict | undefined> {
    const { chain, indexer } = this.deps;
    const stale = Date.now() - Date.parse(lease.updatedAt) > this.timing.staleLeaseMs;
    if (lease.state === "withdrawing" && lease.fundingTxHash !== null) {
      const txHash = lease.fundingTxHash;
      // The receipt is read before asking whether the node knows the transaction: the other way round, a
      // transaction broadcast and mined between the two reads would pass for a known one without a receipt.
      const receipt = await chain.call(() => chain.provider.getTransactionReceipt(txHash));
      if (receipt === null && (!stale || (await chain.knowsTransaction(txHash)))) return undefined;
      if (receipt !== null && receipt.status === 1 && (await this.paidLease(lease, txHash))) return { kind: "paid", txHash };
    }
    if (await chain.isNullifierSpent(lease.nullifierHash)) {
      const spendTx = (await indexer.nullifier(lease.nullifierHash)).spend?.txHash;
      // The indexer has not read the spend yet: unknown until it has.
      if (spendTx === undefined) return undefined;
      return (await this.paidLease(lease, spendTx)) ? { kind: "paid", txHash: spendTx } : { kind: "spent-elsewhere", txHash: spendTx };
    }
    return lease.state === "withdrawing" || stale ? { kind: "nothing-spent" } : undefined;
  }

  /**
   * Whether the mined transaction `txHash` did exactly what `lease` asked, read from what the chain did, whoever sent
   * it and through whatever contract: the pool's Withdrawn of the note (the gross, the change commitment), the token's
   * Transfer that paid the recipient the gross less the fee (none when the pool kept it for its authorization; to the
   * entrypoint, which deposits it into the channel, for a tab), and the pool's record of the spend (PLAIN; the pool's
   * authorization of exactly the lease's transfer and refund anchor; or the hash of the lease's TabRecord: channel,
   * deposit, lifetime and refund anchor).
   */
  private async paidLease(lease: LeaseRecord, txHash: string): Promise<boolean> {
    const { chain } = this.deps;
    const effect = await chain.withdrawalEffect(txHash, lease.nullifierHash);
    if (effect === null || effect.withdrawnValue !== lease.gross || effect.newCommitment !== lease.changeCommitment) return false;
    const pool = chain.deployment.privacyPool;
    const authorizes = poolTransferOfLease(lease, pool) !== undefined;
    // A payout the pool kept pays the lease's recipient by the transfer its record authorizes (payTo, value, window).
    const kept = effect.paid === null && authorizes;
    // A tab's deposit goes through the entrypoint, its channel's deposit collector, in the same transaction.
    const paidTo = tabRecordOf(lease) === undefined ? lease.recipient : chain.deployment.entrypoint;
    if (!kept && (effect.recipient.toLowerCase() !== paidTo.toLowerCase() || effect.paid !== lease.gross - lease.fee)) return false;
    // The token's domain is read only for a lease that needs it: no other spend depends on the token's EIP-712 domain.
    const domain = authorizes ? { pool, separator: (await this.token.read()).separator } : undefined;
    return recordsLease(await chain.call(() => chain.pool.spendRecordOf(lease.nullifierHash)), lease, domain);
  }

  /**
   * What the relay of `lease` names of its payment, from what the lease stored before anything left: the transfer the
   * pool authorizes (settle-x402), or the tab it opens (open-tab).
   */
  private relayPaymentOf(lease: LeaseRecord): Pick<WithdrawalOrder, "tab" | "poolTransfer"> {
    if (lease.payment === null) return {};
    const tab = tabRecordOf(lease);
    if (tab !== undefined) return { tab: { channel: tab.channel, channelId: lease.payment.nonce, reclaimableAfter: tab.reclaimableAfter } };
    const poolTransfer = poolTransferOfLease(lease, this.deps.chain.deployment.privacyPool);
    return poolTransfer === undefined ? {} : { poolTransfer };
  }

  /** Moves `lease`'s reservation from whichever open state it is in; a no-op once it moved on or was taken again. */
  private async moveOpenLease(lease: LeaseRecord, to: LeaseState, fields?: { fundingTxHash?: string }): Promise<void> {
    const { store } = this.deps;
    if (!(await store.advanceLease(lease.nullifierHash, lease.token, "withdrawing", to, fields))) {
      await store.advanceLease(lease.nullifierHash, lease.token, "reserved", to, fields);
    }
  }
}

/** A relay mined and paid whose lease the store could not finalize: spent, so never "nothing was spent". */
function unrecorded(txHash: string): RelayerError {
  return new RelayerError(
    "SETTLEMENT_UNCERTAIN",
    `The withdrawal ${txHash} was mined, but the relayer could not record it (its database is unavailable). Treat the note as spent and retry the same request: it answers the settlement from the chain.`,
    { state: "uncertain", fundingTxHash: txHash },
    undefined,
    5,
  );
}

/** The answer while a lease is open past the wait: uncertain once a transaction may exist, else in progress. */
function stillOpen(lease: LeaseRecord): RelayerError {
  if (lease.state === "withdrawing") {
    return new RelayerError(
      "SETTLEMENT_UNCERTAIN",
      "The withdrawal of this note was sent and is not confirmed yet: treat the note as possibly spent. Retry the same request to resolve it from the chain.",
      { state: "uncertain", fundingTxHash: lease.fundingTxHash },
      undefined,
      5,
    );
  }
  return new RelayerError("SETTLEMENT_IN_PROGRESS", "Another request is settling this note. Retry the same request shortly.", { state: "in-progress" }, undefined, 1);
}

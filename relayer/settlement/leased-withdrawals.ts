import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { changeNoteOf, deriveChangeSecrets, nullifierHashOf } from "../../sdk/index.js";
import type { IndexerClient } from "../../indexer/client.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import type { Faults } from "../faults.js";
import { feeOf } from "../pricing.js";
import type { LeasePayment, LeaseRecord, LeaseState, RelayerStore } from "../store/relayer-store.js";
import type { PoolWithdrawer, WithdrawalOrder } from "./withdrawal.js";

export interface LeasedWithdrawalOrder extends Omit<WithdrawalOrder, "hooks"> {
  /**
   * What else a retry must repeat to be answered from this lease (the route's kind and terms that are not the
   * note, e.g. the seller's network and amount). The recipient, amount, fee and change note are always pinned.
   */
  terms: readonly (string | bigint | number)[];
  /** settle-x402: builds and signs the payer's payment (spec 3.2 step 1), run only when a new lease is taken. */
  buildPayment?: () => Promise<LeasePayment>;
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
   * A lease with no known transaction older than this, nullifier unspent, was abandoned (its holder died) and is
   * freed. Must exceed the longest proving time including the prover's queue.
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
}

/** How many times a request whose lease holder failed takes the lease itself before giving up. */
const MAX_RESERVE_ATTEMPTS = 3;

/**
 * Every spend of a note goes through a lease per nullifier hash (spec 3.2, DESIGN.md 7): reserve, withdraw,
 * finalize. Of concurrent requests for one note exactly one withdraws; a retry of the same request replays the
 * settled lease; a lease whose outcome is unknown is resolved from the chain, never reported unspent.
 */
export class LeasedWithdrawals {
  private readonly timing: LeaseTiming;

  constructor(private readonly deps: LeasedWithdrawalsDeps) {
    this.timing = deps.timing ?? DEFAULT_LEASE_TIMING;
  }

  async withdraw(order: LeasedWithdrawalOrder): Promise<LeasedWithdrawal> {
    const { store, faults } = this.deps;
    const nullifierHash = nullifierHashOf(order.note.nullifier);
    const changeSecrets = order.changeSecrets ?? deriveChangeSecrets(order.note);
    const change = changeNoteOf(order.note, order.amount, changeSecrets);
    const terms = [...order.terms, order.recipient.toLowerCase(), order.amount, order.feeBps, change.commitment];
    const fingerprint = createHash("sha256").update(terms.map(String).join("|")).digest("hex");

    for (let attempt = 0; attempt < MAX_RESERVE_ATTEMPTS; attempt++) {
      const existing = await store.getLease(nullifierHash);
      if (existing !== undefined && existing.state !== "failed") {
        const resolved = await this.answerExisting(existing, fingerprint);
        if (resolved !== undefined) return { lease: resolved, replayed: true };
        continue;
      }
      const payment = (await order.buildPayment?.()) ?? null;
      faults.at("before-reserve");
      const lease: LeaseRecord = {
        nullifierHash,
        state: "reserved",
        fingerprint,
        recipient: order.recipient,
        gross: order.amount,
        fee: feeOf(order.amount, order.feeBps),
        changeCommitment: change.commitment,
        remainingValue: change.value,
        fundingTxHash: null,
        proofTimeMs: null,
        payment,
        updatedAt: new Date().toISOString(),
      };
      if (await store.reserveLease(lease)) {
        return { lease: await this.run(lease, { ...order, changeSecrets }), replayed: false };
      }
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

  /** Steps 3 and 4: withdraw under the lease, then finalize it. */
  private async run(lease: LeaseRecord, order: WithdrawalOrder): Promise<LeaseRecord> {
    const { store, withdrawer, faults } = this.deps;
    const { nullifierHash } = lease;
    faults.at("after-reserve");
    try {
      const outcome = await withdrawer.withdraw({
        ...order,
        hooks: {
          beforeSend: async () => {
            // A lease freed as abandoned while this request proved belongs to someone else now: send nothing.
            if (!(await store.advanceLease(nullifierHash, "reserved", "withdrawing"))) {
              throw new RelayerError("SETTLEMENT_IN_PROGRESS", "This note's lease was taken over while proving; retry the same request.", {}, undefined, 1);
            }
          },
          onSigned: async (txHash) => {
            await store.advanceLease(nullifierHash, "withdrawing", "withdrawing", { fundingTxHash: txHash });
          },
          onSent: async () => faults.at("after-send"),
        },
      });
      faults.at("after-mined");
      await store.advanceLease(nullifierHash, "withdrawing", "settled", { proofTimeMs: outcome.proofTimeMs });
      return { ...lease, state: "settled", fundingTxHash: outcome.txHash, proofTimeMs: outcome.proofTimeMs };
    } catch (error) {
      await this.releaseAfterFailure(nullifierHash, error);
      throw error;
    }
  }

  /**
   * Frees the lease of a withdrawal that failed without an uncertain outcome. Before sending nothing can have
   * moved; after, only a chain that says the nullifier is unspent frees it. Otherwise the lease stays for the
   * chain to resolve.
   */
  private async releaseAfterFailure(nullifierHash: bigint, error: unknown): Promise<void> {
    if (error instanceof RelayerError && error.code === "SETTLEMENT_UNCERTAIN") return;
    const { store, chain } = this.deps;
    if (await store.advanceLease(nullifierHash, "reserved", "failed")) return;
    const spent = await chain.isNullifierSpent(nullifierHash).catch(() => undefined);
    if (spent === false) await store.advanceLease(nullifierHash, "withdrawing", "failed");
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

  /** The settled lease, or undefined when it ended failed (the caller may take it); throws when still open. */
  private async awaitResolution(initial: LeaseRecord): Promise<LeaseRecord | undefined> {
    const deadline = Date.now() + this.timing.waitForLeaseMs;
    let lease = initial;
    for (;;) {
      if (lease.state === "settled") return lease;
      if (lease.state === "failed") return undefined;
      const resolved = await this.resolveFromChain(lease);
      if (resolved !== undefined) {
        if (resolved.state === "settled") return resolved;
        return undefined;
      }
      if (Date.now() >= deadline) throw stillOpen(lease);
      await sleep(this.timing.pollMs);
      lease = (await this.deps.store.getLease(lease.nullifierHash)) ?? lease;
    }
  }

  /**
   * What the chain says of an open lease: settled when its relay transaction (or, when the hash was lost, the
   * transaction that spent the nullifier) paid the lease's recipient; failed when nothing of it was mined and
   * nothing can be anymore. Undefined while unknown. An RPC that cannot answer leaves it unknown.
   */
  private async resolveFromChain(lease: LeaseRecord): Promise<LeaseRecord | undefined> {
    try {
      const { chain } = this.deps;
      if (lease.fundingTxHash !== null) {
        const txHash = lease.fundingTxHash;
        // Mined: it paid the lease's recipient, or it reverted and nothing of this lease moved. The receipt is
        // read before asking whether the node knows the transaction: the other way round, a transaction
        // broadcast and mined between the two reads would pass for a known one without a receipt.
        if ((await chain.call(() => chain.provider.getTransactionReceipt(txHash))) !== null) {
          return (await this.paidRecipient(lease, txHash)) ? this.settle(lease, txHash) : this.fail(lease);
        }
        // Pending: only time tells.
        if (await chain.knowsTransaction(txHash)) return undefined;
      }
      if (await chain.isNullifierSpent(lease.nullifierHash)) {
        const spendTx = (await this.deps.indexer.nullifier(lease.nullifierHash)).spend?.txHash;
        if (spendTx !== undefined && (await this.paidRecipient(lease, spendTx))) return this.settle(lease, spendTx);
        // Spent by someone else (the note's holder through another route): this lease withdrew nothing.
        return spendTx === undefined ? undefined : this.fail(lease);
      }
      const abandoned = Date.now() - Date.parse(lease.updatedAt) > this.timing.staleLeaseMs;
      return abandoned ? this.fail(lease) : undefined;
    } catch {
      return undefined;
    }
  }

  private async paidRecipient(lease: LeaseRecord, txHash: string): Promise<boolean> {
    const paid = await this.deps.chain.relayedWithdrawal(txHash);
    return paid !== null && paid.recipient.toLowerCase() === lease.recipient.toLowerCase() && paid.withdrawnValue === lease.gross;
  }

  private async settle(lease: LeaseRecord, txHash: string): Promise<LeaseRecord> {
    await this.moveOpenLease(lease, "settled", { fundingTxHash: txHash });
    return { ...lease, state: "settled", fundingTxHash: txHash };
  }

  private async fail(lease: LeaseRecord): Promise<LeaseRecord> {
    await this.moveOpenLease(lease, "failed");
    return { ...lease, state: "failed" };
  }

  private async moveOpenLease(lease: LeaseRecord, to: LeaseState, fields?: { fundingTxHash?: string }): Promise<void> {
    const { store } = this.deps;
    if (!(await store.advanceLease(lease.nullifierHash, "withdrawing", to, fields))) {
      await store.advanceLease(lease.nullifierHash, "reserved", to, fields);
    }
  }
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

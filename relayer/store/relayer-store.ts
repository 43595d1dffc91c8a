/** Persistent state of the relayer, behind one interface (node:sqlite now; PostgreSQL for several instances). */

/** A recorded access-fee payment (docs/api.md 3.3). Never holds note secrets: only the public nullifier hash. */
export interface AuthorizationRecord {
  nullifierHash: bigint;
  network: string;
  /** The transaction whose AccessFeePaid named this note; one transaction may pay for several notes, each once. */
  accessTokenTxHash: string;
  amount: bigint;
  authorizedAt: string;
}

/**
 * For which note a recorded authorization holds (docs/design.md 10). A fee paid naming the nullifier hash holds for
 * the note of that hash, whoever it is. One carried over to the change note of a custodial spend holds only for a
 * note of the spent deposit's label, which the relayer saw: naming another deposit's nullifier for a change note
 * carries nothing to that deposit. Rows carried over by earlier versions recorded no label, and hold for no note.
 */
export type StoredAuthorization = { inherited: false } | { inherited: true; label: bigint | null };

/** Prototype agent registry record (docs/api.md 2.7, docs/relayer.md). */
export interface AgentRecord {
  id: string;
  name: string;
  publicKey: string;
  ownerWallet: string;
  perTransactionLimit: bigint;
  dailyLimit: bigint;
  /** Providers (payTo addresses) the agent may pay; empty allows any. */
  providerWhitelist: string[];
  /** Categories the agent may pay for; empty allows any. */
  categories: string[];
  createdAt: string;
}

export interface AgentSpend {
  totalSpent: bigint;
  spentToday: bigint;
  transactionCount: number;
}

/**
 * Idempotency lease per nullifier hash (docs/api.md 3.2, docs/design.md 7), taken by every route that spends a note:
 * reserved (nothing sent) -> withdrawing (the relay transaction is signed and its hash recorded; it may be mined)
 * -> settled | failed (the chain proved nothing of this lease was spent). A retry of the same request replays a
 * settled lease; a different request for the same note is refused. Holds no note secret. docs/relayer.md draws
 * the state machine and who may take each transition.
 */
export type LeaseState = "reserved" | "withdrawing" | "settled" | "failed";

export interface LeaseRecord {
  nullifierHash: bigint;
  state: LeaseState;
  /**
   * Unique to one reservation: every transition names it, so a request acting on an older reservation's snapshot
   * (one freed as abandoned and taken again) can never move the newer one.
   */
  token: string;
  /** Digest of the request's terms (route, recipient, amounts, change commitment); a retry must present the same. */
  fingerprint: string;
  /** Whom the withdrawal pays: the invoice's payTo, a withdraw's recipient, settle-x402's seller (by the pool's authorization), or a tab's TabPayer. */
  recipient: string;
  /** What leaves the pool; the recipient gets gross - fee. */
  gross: bigint;
  fee: bigint;
  changeCommitment: bigint;
  /**
   * What the change note holds. Null for a spend the agent proved itself (docs/design.md 10): the relayer never
   * learns the note's value, so it cannot know what is left.
   */
  remainingValue: bigint | null;
  /**
   * The relay transaction, recorded the moment it is signed, before it leaves. Kept when a failed lease is
   * reserved again (until the new reservation signs its own), so no hash the relayer ever signed is lost.
   */
  fundingTxHash: string | null;
  proofTimeMs: number | null;
  /**
   * settle-x402 only: the payer's signed x402 payment and what the relay makes the pool record of it, stored before
   * anything was withdrawn.
   */
  payment: LeasePayment | null;
  updatedAt: string;
}

/**
 * The payment of a settle-x402 or open-tab lease, stored before anything moves. With the lease's gross less fee (the
 * payout) it is the whole record the relay makes the pool keep (relayer/settlement/payment-record.ts): a retry is
 * answered from it, and the payer sweep returns what it left unused from it, checked against the chain.
 */
export interface LeasePayment extends SignedPayment {
  /**
   * The proof's refundAnchor: what the refund note of whatever comes back is made from. Null only on leases of
   * earlier versions, which did not store it.
   */
  refundAnchor: bigint | null;
}

/** The payment of a settle-x402 or open-tab lease, built before anything is reserved. */
export interface SignedPayment {
  /**
   * What the lease answers retries with: settle-x402's x402 payment header (the pool's authorization), or open-tab's
   * channel and lifetime (relayer/x402/tab-lease.ts).
   */
  xPayment: string;
  /**
   * From when the payer sweep looks at the lease (unix seconds): an authorization's validBefore, after which an unused
   * one comes back; 0 for a tab, whose seller may give its rest back at any time.
   */
  validBefore: number;
  /** The authorization's nonce (the note's nullifier hash), or the tab's channel id. */
  nonce: string;
}

/**
 * What the sweep did with a settled lease's payer once its authorization expired (relayer/x402/payer-sweep.ts). Only
 * the payout the chain recorded for the relay ever moves; whatever else sits at a payer stays there.
 */
export type SweepOutcome =
  /** The seller used the authorization: nothing is refunded. */
  | "used"
  /** Exactly the payout went back into the pool as the agent's refund note. */
  | "deposited"
  /** The chain records no payment of this lease to refund (the note was spent by another transaction). */
  | "not-recorded"
  /** Recorded by earlier versions, which swept a payer's whole balance: nothing left, or too little to deposit. */
  | "empty"
  | "held";

export interface SweepRecord {
  nullifierHash: bigint;
  payer: string;
  /** The refunded amount (the payout the relay recorded); 0 when nothing moved. */
  amount: bigint;
  outcome: SweepOutcome;
  /** The refund deposit, when outcome is `deposited`. */
  depositTxHash: string | null;
  sweptAt: string;
}

export interface RelayerStore {
  /**
   * Takes the lease for `lease.nullifierHash` in state `reserved` under `lease.token`. Returns true when taken: no
   * lease existed, or only a `failed` one (the chain proved nothing of it was spent), whose transaction hash is
   * kept. Atomic: of concurrent callers exactly one wins.
   */
  reserveLease(lease: LeaseRecord): Promise<boolean>;
  getLease(nullifierHash: bigint): Promise<LeaseRecord | undefined>;
  /**
   * Moves the reservation `token` of a lease from `from` to `to` (`from` = `to` refreshes `updatedAt`: the
   * holder's heartbeat). A compare-and-set on both: false when the lease is in another state or was reserved
   * again since. Fields not given are kept.
   */
  advanceLease(
    nullifierHash: bigint,
    token: string,
    from: LeaseState,
    to: LeaseState,
    fields?: { fundingTxHash?: string; proofTimeMs?: number },
  ): Promise<boolean>;

  /** How many leases are in each state: a gauge of the metrics, and the readiness probe's database check. */
  leaseCounts(): Promise<Record<LeaseState, number>>;
  /**
   * Runs `work` unless another relayer sharing this database runs work of the same `lock` now (a PostgreSQL
   * advisory lock held for the run); false when it was skipped. A SQLite file serves one relayer: it always runs.
   */
  exclusively(lock: string, work: () => Promise<void>): Promise<boolean>;

  /** Settled settle-x402 leases whose authorization expired at or before `nowSeconds` and that no sweep has recorded yet. */
  expiredUnsweptLeases(nowSeconds: number): Promise<LeaseRecord[]>;
  recordSweep(record: SweepRecord): Promise<void>;
  getSweep(nullifierHash: bigint): Promise<SweepRecord | undefined>;

  /**
   * Records a fee paid naming the note, in place of an authorization carried over to it; false when a paid one is
   * recorded already.
   */
  recordAuthorization(record: AuthorizationRecord): Promise<boolean>;
  authorizationOf(nullifierHash: bigint): Promise<StoredAuthorization | undefined>;
  /**
   * Carries the authorization of a spent note over to its change note (one access fee per deposit), bound to the
   * deposit's `label`; nothing when the spent note had none, or the change note has one already.
   */
  inheritAuthorization(spentNullifierHash: bigint, changeNullifierHash: bigint, label: bigint): Promise<void>;

  /**
   * Takes a seller-side shielded-proof payment (relayer/seller/) for one settle's relay, by its nullifier hash, for
   * `leaseSeconds`: false while another settle's claim holds. Atomic across the relayers sharing the database, so
   * one relay leaves at a time; a claim left by a relayer that died lapses, and the next settle reads the chain.
   */
  claimSellerPayment(nullifierHash: bigint, leaseSeconds: number): Promise<boolean>;
  /** Gives a claim back: its settle ended. */
  releaseSellerPayment(nullifierHash: bigint): Promise<void>;

  createAgent(agent: AgentRecord): Promise<void>;
  getAgent(id: string): Promise<AgentRecord | undefined>;
  listAgents(): Promise<AgentRecord[]>;
  agentSpend(id: string, day: string): Promise<AgentSpend>;
  recordAgentSpend(id: string, amount: bigint, day: string): Promise<void>;

  close(): Promise<void>;
}

/** Lease counts from (state, count) rows, every state present. */
export function countsByState(rows: Iterable<[string, number]>): Record<LeaseState, number> {
  const counts: Record<LeaseState, number> = { reserved: 0, withdrawing: 0, settled: 0, failed: 0 };
  for (const [state, count] of rows) if (state in counts) counts[state as LeaseState] = count;
  return counts;
}

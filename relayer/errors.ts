/**
 * Every failure the facilitator API reports, with its HTTP status. docs/api.md section 7's classes come first. The
 * error middleware turns a RelayerError into the one error body (schemas/error.ts):
 * `{ error: "<what happened and what to do>", code: "<CODE>" }`, plus `settled: false` on settle routes and
 * any extra fields the error carries (the 402 `authorization` block).
 */
export const RELAYER_ERROR_STATUS = {
  // ---- docs/api.md section 7 ----
  /** A required chain RPC, relay key or indexer token is missing (the process refuses to start). */
  MISSING_SERVER_CONFIG: 500,
  /** `maxAmountRequired` / `amountAtomic` missing, zero, malformed or too high. */
  INVALID_PAYMENT_AMOUNT: 400,
  /** The state tree does not contain the commitment. */
  DEPOSIT_NOT_FOUND: 404,
  /** Wrong tree, stale ASP root, label not in the association set, or a note whose fields do not match. */
  INVALID_PROOF: 422,
  /** The note's nullifier is spent on chain. */
  ALREADY_SPENT: 409,
  /** The access-fee gate is enforced and the note's nullifier has no authorization. */
  NULLIFIER_NOT_AUTHORIZED: 402,
  /** The amount is under the tier's minimum settle. */
  BELOW_MINIMUM_SETTLE: 400,
  // ---- the rest ----
  /**
   * Paid mode: the take on the amount would not cover the relay's gas at the current depth and gas price (the fee
   * floor, relayer/pricing/pricing.ts); the message names the floor and the smallest amount that passes.
   */
  BELOW_FEE_FLOOR: 400,
  /** The body or query does not match the endpoint's schema. */
  INVALID_REQUEST: 400,
  /** The anonymity set is below the privacy minimum and the caller did not pass acceptNotPrivate:true. */
  PRIVACY_NOT_ACKNOWLEDGED: 412,
  /** The access-fee transfer does not qualify (wrong network, recipient, amount, or already used). */
  AUTHORIZATION_REJECTED: 400,
  /** The agent's key (X-Agent-Key, returned at registration) is missing or wrong for the agentId named. */
  AGENT_UNAUTHORIZED: 401,
  /** An agent's limits, whitelist or categories forbid the payment. */
  AGENT_LIMIT_EXCEEDED: 403,
  /**
   * A proof-carrying settle whose quote expired before a withdrawal was made for it (docs/api.md 4.10): nothing was
   * spent; ask for a new quote and prove against it.
   */
  QUOTE_EXPIRED: 410,
  /** No such route or record. */
  NOT_FOUND: 404,
  /** Another request is settling the same note right now. */
  SETTLEMENT_IN_PROGRESS: 409,
  /**
   * The relay transaction was sent but its outcome is not known yet: the note must be treated as possibly
   * spent. A retry of the same request resolves it from the chain (docs/api.md 3.2).
   */
  SETTLEMENT_UNCERTAIN: 202,
  /** The indexer has not finished its first sync. */
  INDEXER_COLD: 503,
  /** The indexer cannot be reached or answered with an error. */
  INDEXER_UNAVAILABLE: 503,
  /** The chain RPC cannot be reached, timed out or answered an error before anything was sent; nothing was spent. */
  CHAIN_UNAVAILABLE: 503,
  /**
   * The relayer's database cannot serve the request now (locked past its busy timeout, unreachable, a statement or
   * lock timeout); before anything was sent, so nothing was spent. Retry-After says when to retry.
   */
  STORE_UNAVAILABLE: 503,
  /** The proof queue is full (RELAYER_PROVER_QUEUE proofs wait behind the one being proven); nothing was spent. Retry-After says when to retry. */
  PROVER_BUSY: 503,
  /**
   * Too many requests, across all callers or for one note (relayer/http/rate-limit.ts); Retry-After says when
   * to retry. Nothing was done.
   */
  RATE_LIMITED: 429,
  /** The relayer is shutting down and takes no new requests; nothing was done. Retry against its successor. */
  SHUTTING_DOWN: 503,
  /**
   * A readiness check fails (database, chain RPC, indexer, prover: GET /health/ready names it); a spend is refused
   * before any proof or lease, so nothing was spent. Retry-After says when to retry.
   */
  NOT_READY: 503,
  /**
   * The relaying key's ETH cannot pay a relay's gas at the current gas price; a spend is refused before any proof
   * or lease, so nothing was spent. The message names the balance and the cost; the operator funds the key.
   */
  RELAYER_UNFUNDED: 503,
  /** A bug: nothing is reported spent. Faults of the chain, the indexer or the database have codes of their own. */
  INTERNAL: 500,
} as const;

export type RelayerErrorCode = keyof typeof RELAYER_ERROR_STATUS;

export class RelayerError extends Error {
  readonly status: number;

  constructor(
    readonly code: RelayerErrorCode,
    message: string,
    /** Fields added to the error body, e.g. the 402 `authorization` block. */
    readonly extra: Record<string, unknown> = {},
    /** A more precise status within the code's class (413 for an oversized body). */
    status: number = RELAYER_ERROR_STATUS[code],
    /** Sent as the Retry-After header: when a retry of the same request can succeed (back-pressure, outages). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = "RelayerError";
    this.status = status;
  }
}

/** Why X402Agent refused or failed a payment; never carries a secret. */
export type X402AgentErrorCode =
  /** The seller answered 402 without x402 details: a generic paywall. */
  | "NOT_X402"
  /** The seller's 402 offers no `exact` entry in the facilitator's USDC on its chain. */
  | "NO_USABLE_ENTRY"
  /** The free probe found the seller would not read an x402 payment: no note was touched. */
  | "SELLER_INCOMPATIBLE"
  /** The seller's price is above maxPaymentAtomic: nothing was paid. */
  | "PRICE_ABOVE_MAXIMUM"
  /** The payment would take the agent past budgetAtomic: nothing was paid. */
  | "BUDGET_EXHAUSTED"
  /** No unspent note holds the seller's amount plus the take. */
  | "NO_NOTE"
  /** The settlement's outcome is still unknown after the retries: retry later, the note may be spent. */
  | "SETTLEMENT_UNCERTAIN"
  /**
   * The facilitator answered every attempt with a 503 (its store, chain, indexer or prover unavailable): nothing was
   * spent, the note is free. Retry later.
   */
  | "FACILITATOR_UNAVAILABLE"
  /** The payer was funded but the seller did not answer the paid request with 2xx (PaymentNotAcceptedError). */
  | "PAYMENT_NOT_ACCEPTED"
  /** custody "non-custodial", and the facilitator does not relay proofs of this circuit: nothing was sent. */
  | "NON_CUSTODIAL_UNAVAILABLE"
  /** The facilitator's quote binds other terms than the agent asked for, or its trees do not rebuild the quoted roots. */
  | "QUOTE_REFUSED"
  /** The facilitator's trees do not hold the note (its indexer is behind, or the ASP has not approved the deposit). */
  | "NOTE_NOT_IN_TREE"
  /**
   * The facilitator served or quoted trees older than the roots the agent's own RPC shows (or smaller than it served a
   * moment before): nothing was proven or spent, and no quote is asked again under that nullifier hash. Retry later,
   * or pay through another facilitator.
   */
  | "ROOTS_STALE"
  /** The agent's own RPC (ownRpc) did not answer: nothing was proven or spent. Retry once it does. */
  | "OWN_RPC_UNAVAILABLE"
  /** The facilitator names another pool or entrypoint than the agent's own RPC shows for ownRpc.privacyPool: nothing was sent. */
  | "POOL_MISMATCH"
  /**
   * The facilitator asks an access fee the agent will not pay out of the note: above maxAccessFeeAtomic, or it relays
   * no proofs of this SDK's circuit. Nothing was paid.
   */
  | "ACCESS_FEE_REFUSED"
  /** The pool's association set is below the privacy minimum and acceptNotPrivate is not set: nothing was paid. */
  | "PRIVACY_NOT_ACKNOWLEDGED"
  /**
   * The seller refused a shielded-proof payment (ShieldedPaymentRefusedError): nothing moved unless its facilitator
   * relays it before its validBefore; the note is held until then.
   */
  | "SHIELDED_PAYMENT_REFUSED"
  /** The URL redirected to another origin: the agent pays only the origin it was asked for. Nothing was paid. */
  | "CROSS_ORIGIN_REDIRECT"
  /**
   * The seller did not answer a request paid on a private tab with 2xx: the voucher (or the tab's deposit, which
   * the payer sweep refunds after its window when the seller never takes it) bought nothing.
   */
  | "TAB_PAYMENT_REFUSED"
  /**
   * A request paid on a private tab got no answer from the seller (the connection failed after it was sent). The tab
   * keeps the payment as unanswered: repeat the request, and it is paid from the same total (a seller that answered
   * it names it in its corrective 402, and the agent pays the request once more).
   */
  | "TAB_ANSWER_LOST"
  /**
   * The seller answered a request paid on a private tab without deciding it (its facilitator could not read or reach
   * the chain, or the channel was held by a request in flight): no refusal. Repeat the request: the same payment is
   * sent again.
   */
  | "TAB_SELLER_UNAVAILABLE";


export class X402AgentError extends Error {
  constructor(
    readonly code: X402AgentErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "X402AgentError";
  }
}

/** Why depositNote refused a deposit before sending anything; never carries a secret. */
export type DepositErrorCode =
  /** The value is below the pool's minimum deposit (1 USDC). */
  | "DEPOSIT_BELOW_MINIMUM"
  /** The signer's USDC balance cannot cover the value. */
  | "DEPOSIT_ABOVE_BALANCE"
  /** The seed's deposit index already holds a deposit: a second note with its nullifier could never be spent. */
  | "DEPOSIT_INDEX_USED";

export class DepositError extends Error {
  constructor(
    readonly code: DepositErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "DepositError";
  }
}

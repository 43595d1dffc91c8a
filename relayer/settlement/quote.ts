import { createHmac, timingSafeEqual } from "node:crypto";
import type { RelayTerms } from "./spend.js";

/** The proof-carrying requests a quote is for: the settles of docs/api.md 4.10, a tab's deposit, and an access fee paid out of the note. */
export type QuoteRoute = "settle" | "settle-x402" | "open-tab" | "access-fee";

/**
 * What a proof of a non-custodial spend must bind (docs/design.md 10): every public signal but the change commitment,
 * the relay terms its context commits to, and until when the relayer takes a proof of it.
 */
export interface Quote extends Omit<RelayTerms, "tab"> {
  route: QuoteRoute;
  nullifierHash: bigint;
  /** The entrypoint: the Withdrawal's processooor. */
  processooor: string;
  scope: bigint;
  /** What leaves the pool; the recipient gets withdrawnValue - fee. */
  withdrawnValue: bigint;
  fee: bigint;
  /**
   * withdrawalContext of the Withdrawal {processooor, RelayData(recipient, feeRecipient, feeBps)} (for an access fee,
   * AccessFeeData(recipient, authorizedNullifierHash)) and the scope.
   */
  context: bigint;
  stateRoot: bigint;
  stateTreeDepth: number;
  /** Leaves of the state tree under stateRoot: an agent rebuilds it from the first stateTreeSize commitments. */
  stateTreeSize: number;
  aspRoot: bigint;
  aspTreeDepth: number;
  aspTreeSize: number;
  /** Unix seconds after which no new withdrawal is made for this quote. */
  expiresAt: number;
  /**
   * settle-x402: the pool's one EIP-3009 transfer to the seller (Entrypoint's PoolAuthorization), fixed now so that the
   * proof's context binds it: its nonce, the note's nullifier hash, and its window. open-tab: the channel's id as
   * paymentNonce, and the tab's reclaimableAfter as paymentValidBefore (Entrypoint's TabOpening). A proof of this quote
   * pays only this seller, this amount, in this window, or this channel.
   */
  paymentNonce?: string;
  paymentValidAfter?: number;
  paymentValidBefore?: number;
}

/** A quote with the relayer's HMAC over it: it checks its own quotes without keeping them. */
export interface SignedQuote extends Quote {
  signature: string;
}

/**
 * Domain of the quote key, so that it is independent of every other key derived from the same secret. A new quote
 * format takes a new tag: quotes of the old one then fail their MAC.
 */
const QUOTE_KEY_TAG = "x402-privacy-facilitator/quote/v2";

/**
 * HMAC-SHA256 of quotes under a key derived from the operator's PAYER_KEY_SECRET: relayers that share the secret (one
 * deployment behind a load balancer) accept each other's quotes, and nothing is stored.
 */
export class QuoteSigner {
  private readonly key: Buffer;

  constructor(payerKeySecret: string) {
    this.key = createHmac("sha256", Buffer.from(payerKeySecret.slice(2), "hex")).update(QUOTE_KEY_TAG).digest();
  }

  sign(quote: Quote): SignedQuote {
    return { ...quote, signature: this.mac(quote) };
  }

  /** Whether `quote` is one this key signed, unaltered. */
  isAuthentic({ signature, ...quote }: SignedQuote): boolean {
    const expected = Buffer.from(this.mac(quote).slice(2), "hex");
    const given = Buffer.from(signature.slice(2), "hex");
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** The MAC of every field, in name order; values as text, addresses in lower case (their checksum is not data). */
  private mac(quote: Quote): string {
    const fields = Object.entries(quote)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, value]) => [name, String(value).toLowerCase()]);
    return `0x${createHmac("sha256", this.key).update(JSON.stringify(fields)).digest("hex")}`;
  }
}

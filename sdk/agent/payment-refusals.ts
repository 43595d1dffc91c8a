import type { SettleX402Answer, SettleX402ProofAnswer } from "../client/facilitator-client.js";
import { paymentResponseHeaderOf, parsePaymentRequired, settlementErrorOf } from "../x402/index.js";
import { X402AgentError } from "./errors.js";

/** What the agent knows of a funded payment the seller did not accept. */
export interface UnacceptedPayment {
  url: string;
  /** The seller's answer to the paid request. */
  seller: {
    status: number;
    /** Its body, when the client read it (X402Agent.fetch does; an @x402/core client's payment-response hook sees headers only). */
    body?: string;
    /**
     * Why, in x402's words: the payment response's errorReason when the seller's facilitator failed to settle (e.g.
     * "invalid_exact_evm_transaction_failed"), else the error its 402 gave (e.g. "invalid_exact_evm_signature").
     */
    reason?: string;
    /** Its PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1) header, when it sent one. */
    paymentResponse?: string;
  };
  /** The payment's payer: the pool, which holds `amount` for the seller until its facilitator moves it or validBefore passes. */
  payer: string;
  /** The seller's price, which the pool's authorization transfers. */
  amount: string;
  /** What left the note: amount plus the take. */
  gross: string;
  fundingTxHash: string;
  /** The payment the seller refused: what returnUnusedPayment returns after validBefore. */
  xPayment: string;
  /** The authorization's validBefore (unix seconds): the seller cannot use it from then on. */
  validBefore: number;
  /** When and how the price comes back. */
  refund: string;
}

/**
 * The pool authorized the seller's price but the seller did not answer the paid request with 2xx. The change note is
 * saved; the price stays in the pool. After the authorization's validBefore, Entrypoint.refundAuthorization (anyone's
 * call: the operator's sweep, or the agent's own) makes it the refund note the proof committed to (the spent note's
 * label and refund secrets), which recoverNotes finds from the seed alone (docs/sdk.md, "When a seller refuses").
 */
export class PaymentNotAcceptedError extends X402AgentError {
  constructor(readonly payment: UnacceptedPayment) {
    super(
      "PAYMENT_NOT_ACCEPTED",
      `${payment.url} answered the paid request with ${payment.seller.status}${payment.seller.reason === undefined ? "" : ` (${payment.seller.reason})`}. ` +
        `The pool ${payment.payer} had authorized ${payment.amount} atomic USDC to the seller (${payment.gross} left the note). ${payment.refund}`,
    );
    this.name = "PaymentNotAcceptedError";
  }
}

/**
 * The seller did not answer a shielded-proof payment with 2xx. Nothing moved when its facilitator did not settle; but
 * the payment binds the note until its validBefore (a facilitator could still relay it until then, paying exactly the
 * seller's terms), so the agent does not spend that note elsewhere before then.
 */
export class ShieldedPaymentRefusedError extends X402AgentError {
  constructor(
    readonly url: string,
    readonly seller: UnacceptedPayment["seller"],
    /** Unix seconds: from then on the pool refuses the payment, and the note is free for another. */
    readonly validBefore: number,
    /**
     * The seller answered an outage, or that the payment was busy, until the agent stopped presenting it: not a
     * refusal. Fetching the same URL again presents the same payment first (this process), never a new one.
     */
    readonly retryable = false,
  ) {
    super(
      "SHIELDED_PAYMENT_REFUSED",
      `${url} answered the shielded-proof payment with ${seller.status}${seller.reason === undefined ? "" : ` (${seller.reason})`}` +
        (retryable ? ", an outage rather than a refusal: fetch it again to present the same payment. " : ". ") +
        `Nothing moved unless its facilitator relays the payment before ${new Date(validBefore * 1000).toISOString()} (validBefore ${validBefore}), which would pay exactly its price; ` +
        "the agent holds the note until then.",
    );
    this.name = "ShieldedPaymentRefusedError";
  }
}

/** What a settle-x402 answers, whoever proved: the payment for the seller (xPayment) and what it cost. */
export type X402Settlement = SettleX402Answer | SettleX402ProofAnswer;

/** The PaymentNotAcceptedError of a paid request the seller answered with `response` (consumes its body). */
export async function unaccepted(url: string, response: Response, answer: X402Settlement): Promise<PaymentNotAcceptedError> {
  const body = await response.text();
  const reason = settlementErrorOf(response.headers) ?? parsePaymentRequired(response.headers, body)?.error;
  const paymentResponse = paymentResponseHeaderOf(response.headers);
  return paymentNotAccepted(url, { status: response.status, body, ...(reason !== undefined && { reason }), ...(paymentResponse !== undefined && { paymentResponse }) }, answer);
}

/** The PaymentNotAcceptedError of the settlement `answer`, which the seller answered with `seller`. */
export function paymentNotAccepted(url: string, seller: UnacceptedPayment["seller"], answer: X402Settlement): PaymentNotAcceptedError {
  const expiry = new Date(answer.validBefore * 1000).toISOString();
  return new PaymentNotAcceptedError({
    url,
    seller,
    payer: answer.payer,
    amount: answer.amount,
    gross: answer.gross,
    fundingTxHash: answer.fundingTxHash,
    xPayment: answer.xPayment,
    validBefore: answer.validBefore,
    refund:
      `The seller can use the authorization until ${expiry} (validBefore ${answer.validBefore}). After that anyone may return it ` +
      "(Entrypoint.refundAuthorization: the operator's sweep, or this agent's returnUnusedPayment) as a refund note under this note's refund secrets, " +
      "which only this agent can spend; recoverNotes finds it from the seed.",
  });
}

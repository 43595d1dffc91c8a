import { nullifierHashOf, type Note, type NoteSecrets, type WithdrawProof } from "../../sdk/index.js";
import {
  amountOf,
  encodeXPayment,
  paymentPayloadOf,
  poolAuthorizationPayload,
  poolTransferFor,
  x402VersionOf,
  type ExactRequirement,
  type PoolTransfer,
  type ResourceInfo,
} from "../../sdk/x402/index.js";
import type { AccessFeeGate } from "../buyer/access-fee-gate.js";
import { RelayerError } from "../errors.js";
import { spendRecordOf, type ProvenSpendResult, type SettledSpend, type SpendResult } from "../buyer/facilitator.js";
import type { SellerEntry } from "../schemas/settle-x402.js";
import type { SignedQuote } from "../settlement/quote.js";
import type { SignedPayment } from "../store/relayer-store.js";
import { PaymentPreflight, payerWindow, type PayerOrder, type PayerTerms, type PaymentPreflightDeps } from "./payment-preflight.js";

/** What every settle-x402 request names besides the note or the proof: the seller's `exact` entry (v1 or v2 shape). */
export interface X402Terms extends PayerTerms<SellerEntry> {
  /** The v2 402's `resource`, echoed in a v2 payment. */
  resource?: ResourceInfo;
}

export interface X402SettleRequest extends X402Terms {
  note: Note;
  /** Change-note secrets; derived from the spent note when absent (docs/design.md 2). */
  changeSecrets?: NoteSecrets;
}

/** quote-x402 (docs/api.md 4.10): the note is named by its nullifier hash only. */
export interface X402QuoteRequest extends X402Terms {
  nullifierHash: bigint;
}

/** settle-x402-proof (docs/api.md 4.10): the agent's proof of a quote, and the request's retry key. */
export interface X402ProvenRequest extends X402Terms {
  quote: SignedQuote;
  proof: WithdrawProof;
  /**
   * 32 random bytes of the agent's (hex). A retry must repeat them: they appear in no transaction, so a reader of the
   * relay's calldata cannot be answered the payment. Nothing of the note's: the relayer learns nothing from them.
   */
  retryKey: string;
}

/** What settle-x402 answers besides the spend that made the pool the seller's payer. */
export interface X402Payment {
  xPayment: string;
  x402Version: 1 | 2;
  /** The payment's `from`: the pool, which authorized exactly this transfer by the relay. */
  payer: string;
  /** The seller's amount (the authorization's value); `amount` is the gross that left the note. */
  sellerAmount: bigint;
  validBefore: number;
}

export type X402Settlement = SpendResult & X402Payment;
export type X402ProvenSettlement = ProvenSpendResult & X402Payment;

/** What settle-x402 and a private tab's opening (open-tab.ts) need: the pre-flight's and the access fee. */
export interface X402SettlerDeps extends PaymentPreflightDeps {
  accessFee: AccessFeeGate;
}

/** A seller's `exact` entry once the pre-flight passed (the check guarantees it names a domain). */
type SellerOrder = PayerOrder<SellerEntry> & { accepted: ExactRequirement };

/**
 * settle-x402 (docs/api.md 3.2 and 4.4, docs/design.md 5-7): the pool pays an x402 seller itself. First the pre-flight
 * (seller-terms.ts): every term the seller's facilitator checks is checked here. Then, under the note's lease: build
 * the x402 payment of the one EIP-3009 transfer from the pool to the seller that the relay authorizes (the pool's
 * ERC-1271 answers for it, so the seller's own facilitator pulls the price from the pool), reserve, relay the
 * withdrawal (the payout stays in the pool for that transfer; the take accrues to the treasury), finalize. A retry
 * replays the stored payment and withdraws nothing. The proof is the relayer's from the note (settle), or the agent's
 * (settleProven, after quote). No key of the operator's can move the payout: not taken by validBefore, it comes back
 * as the agent's refund note by Entrypoint.refundAuthorization, which anyone may call.
 */
export class X402Settler {
  private readonly preflights: PaymentPreflight;

  constructor(private readonly deps: X402SettlerDeps) {
    this.preflights = new PaymentPreflight(deps);
  }

  async settle(request: X402SettleRequest): Promise<X402Settlement> {
    const { facilitator } = this.deps;
    const { note } = request;
    const order = await this.preflight(request, note.value);
    const nullifierHash = nullifierHashOf(note.nullifier);
    await this.deps.accessFee.assertAuthorized(nullifierHash, note.label);
    const transfer = poolTransferFor(order.accepted, payerWindow(order.accepted, await this.preflights.clocks()), nullifierHash);
    const result = await facilitator.spend(note, {
      amount: order.gross,
      recipient: order.accepted.payTo,
      terms: order.terms,
      changeSecrets: request.changeSecrets,
      buildPayment: async (refundAnchor) => this.buildPayment(order, request.resource, transfer, refundAnchor),
    });
    await facilitator.recordSpend(spendRecordOf(note, { amount: order.sellerAmount, agentId: request.agentId }, result), result.replayed);
    return { ...result, ...this.paymentOf(result, order) };
  }

  /**
   * quote-x402 (docs/api.md 4.10): every check settle-x402 makes before it spends, bar the note's value, which only the
   * agent knows; then what the agent's proof must bind: the pool's authorization of the seller's price in a window.
   */
  async quote(request: X402QuoteRequest): Promise<SignedQuote> {
    const order = await this.preflight(request);
    const transfer = poolTransferFor(order.accepted, payerWindow(order.accepted, await this.preflights.clocks()), request.nullifierHash);
    return this.deps.facilitator.issueQuote({
      route: "settle-x402",
      nullifierHash: request.nullifierHash,
      recipient: order.accepted.payTo,
      amount: order.gross,
      poolTransfer: transfer,
    });
  }

  /**
   * settle-x402-proof (docs/api.md 4.10): settle-x402 with the agent's proof of a quote instead of the note. The
   * pre-flight runs again and the proof must bind exactly what it derives; the relayer relays it as it stands.
   */
  async settleProven(request: X402ProvenRequest): Promise<X402ProvenSettlement> {
    const { facilitator } = this.deps;
    const order = await this.preflight(request);
    const { quote } = request;
    const { nullifierHash } = quote;
    await this.deps.accessFee.assertAuthorized(nullifierHash);
    const transfer = quotedPoolTransfer(quote, order.accepted);
    const result = await facilitator.spendProven(quote, request.proof, {
      route: "settle-x402",
      amount: order.gross,
      recipient: order.accepted.payTo,
      poolTransfer: transfer,
      // The retry key is in no transaction: a retry must be the agent's, not a reader of the relay's calldata.
      terms: [...order.terms, request.retryKey],
      buildPayment: async (refundAnchor) => this.buildPayment(order, request.resource, transfer, refundAnchor),
    });
    await facilitator.recordSpend({ nullifierHash, amount: order.sellerAmount, agentId: request.agentId }, result.replayed);
    return { ...result, ...this.paymentOf(result, order) };
  }

  /** Everything checked of a payment before anything is reserved (payment-preflight.ts), for the seller's price. */
  private async preflight(request: X402Terms, noteValue?: bigint): Promise<SellerOrder> {
    // An entry's amount is read before the pre-flight: a malformed one is refused by the schema, not here.
    return (await this.preflights.order("x402", request, BigInt(amountOf(request.accepted as ExactRequirement)), noteValue)) as SellerOrder;
  }

  /**
   * Step 1, before anything is reserved or withdrawn: the seller's x402 payment of the pool's transfer, signed with
   * what the pool's isValidSignature finds its record by (the note's nullifier hash and the proof's refund anchor).
   */
  private buildPayment(order: SellerOrder, resource: ResourceInfo | undefined, transfer: PoolTransfer, refundAnchor: bigint): SignedPayment {
    const payload = poolAuthorizationPayload(this.deps.chain.deployment.privacyPool, transfer, refundAnchor);
    return { xPayment: encodeXPayment(paymentPayloadOf(order.accepted, resource, payload)), validBefore: Number(transfer.validBefore), nonce: transfer.nonce };
  }

  private paymentOf(result: SettledSpend, order: SellerOrder): X402Payment {
    const payment = result.lease.payment!;
    return {
      xPayment: payment.xPayment,
      validBefore: payment.validBefore,
      x402Version: x402VersionOf(order.accepted),
      payer: this.deps.chain.deployment.privacyPool,
      sellerAmount: order.sellerAmount,
    };
  }
}

/**
 * The pool's transfer a settle-x402 quote fixed: the seller's entry of the request in the quote's window, under the
 * quoted note's nullifier hash. For an entry other than the quoted one it is another transfer, which the proof's
 * context does not bind (ProvenSpends.admit refuses it).
 */
function quotedPoolTransfer(quote: SignedQuote, accepted: ExactRequirement): PoolTransfer {
  const { paymentValidAfter, paymentValidBefore } = quote;
  if (quote.route !== "settle-x402" || paymentValidAfter === undefined || paymentValidBefore === undefined) {
    throw new RelayerError("INVALID_REQUEST", "quote: not a settle-x402 quote (it fixes no payment). Ask quote-x402 for one and prove against it. Nothing was spent.");
  }
  return poolTransferFor(accepted, { validAfter: BigInt(paymentValidAfter), validBefore: BigInt(paymentValidBefore) }, quote.nullifierHash);
}

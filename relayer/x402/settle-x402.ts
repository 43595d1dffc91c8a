import { nullifierHashOf, type Note, type NoteSecrets, type WithdrawProof } from "../../sdk/index.js";
import {
  amountOf,
  authorizationSignerUnder,
  buildPaymentPayload,
  encodeXPayment,
  paymentNonceOf,
  type ValidityWindow,
  x402VersionOf,
  type ExactRequirement,
  type ResourceInfo,
} from "../../sdk/x402/index.js";
import { hexlify, randomBytes, type Wallet } from "ethers";
import type { AccessFeeGate } from "../buyer/access-fee-gate.js";
import { RelayerError } from "../errors.js";
import { spendRecordOf, type ProvenSpendResult, type SettledSpend, type SpendResult } from "../buyer/facilitator.js";
import type { SellerEntry } from "../schemas/settle-x402.js";
import type { SignedQuote } from "../settlement/quote.js";
import type { SignedPayment } from "../store/relayer-store.js";
import { payerWallet } from "./payer-keys.js";
import { PaymentPreflight, payerWindow, type PayerOrder, type PayerTerms, type PaymentClocks, type PaymentPreflightDeps } from "./payment-preflight.js";

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

/** What settle-x402 answers besides the spend that funded its payer. */
export interface X402Payment {
  xPayment: string;
  x402Version: 1 | 2;
  /** The single-use payer the withdrawal funded; it holds exactly the seller's amount. */
  payer: string;
  /** The seller's amount (the payer's authorization); `amount` is the gross that left the pool. */
  sellerAmount: bigint;
  validBefore: number;
}

export type X402Settlement = SpendResult & X402Payment;
export type X402ProvenSettlement = ProvenSpendResult & X402Payment;

/** What settle-x402 and a private tab's opening (open-tab.ts) need: the pre-flight's, the access fee and the payers' secret. */
export interface X402SettlerDeps extends PaymentPreflightDeps {
  accessFee: AccessFeeGate;
  payerKeySecret: string;
}

/** A seller's `exact` entry once the pre-flight passed (the check guarantees it names a domain). */
type SellerOrder = PayerOrder<SellerEntry> & { accepted: ExactRequirement };

/**
 * settle-x402 (docs/api.md 3.2 and 4.4, docs/design.md 5-7): pays an x402 seller through a fresh single-use payer. First the
 * pre-flight (seller-terms.ts): every term the seller's facilitator checks after funding is checked here. Then,
 * under the note's lease: build and sign the payer's EIP-3009 payment for the seller and recover its signer
 * against the token's domain separator, reserve, withdraw the gross amount to the payer by proof (the payer then
 * holds exactly the seller's amount; the take goes to the treasury), finalize. A retry replays the stored payment
 * and withdraws nothing. The proof is the relayer's from the note (settle), or the agent's (settleProven, after quote).
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
    const payer = payerWallet(this.deps.payerKeySecret, nullifierHash);
    const result = await facilitator.spend(note, {
      amount: order.gross,
      recipient: payer.address,
      terms: order.terms,
      changeSecrets: request.changeSecrets,
      buildPayment: async () => this.buildPayment(order, request.resource, payer, newPayerAuthorization(order.accepted, await this.preflights.clocks())),
    });
    await facilitator.recordSpend(spendRecordOf(note, { amount: order.sellerAmount, agentId: request.agentId }, result), result.replayed);
    return { ...result, ...this.paymentOf(result, order, payer) };
  }

  /**
   * quote-x402 (docs/api.md 4.10): every check settle-x402 makes before it spends, bar the note's value, which only the
   * agent knows; then what the agent's proof must bind, with the single-use payer as recipient.
   */
  async quote(request: X402QuoteRequest): Promise<SignedQuote> {
    const order = await this.preflight(request);
    const payer = payerWallet(this.deps.payerKeySecret, request.nullifierHash);
    const { window, salt, nonce } = newPayerAuthorization(order.accepted, await this.preflights.clocks());
    return this.deps.facilitator.issueQuote({
      route: "settle-x402",
      nullifierHash: request.nullifierHash,
      recipient: payer.address,
      amount: order.gross,
      payment: { nonce, salt, ...window },
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
    const payer = payerWallet(this.deps.payerKeySecret, nullifierHash);
    const payment = quotedPayerAuthorization(quote, order.accepted);
    const result = await facilitator.spendProven(quote, request.proof, {
      route: "settle-x402",
      amount: order.gross,
      recipient: payer.address,
      payment: { nonce: payment.nonce, validBefore: payment.window.validBefore },
      // The retry key is in no transaction: a retry must be the agent's, not a reader of the relay's calldata.
      terms: [...order.terms, request.retryKey],
      buildPayment: () => this.buildPayment(order, request.resource, payer, payment),
    });
    await facilitator.recordSpend({ nullifierHash, amount: order.sellerAmount, agentId: request.agentId }, result.replayed);
    return { ...result, ...this.paymentOf(result, order, payer) };
  }

  /** Everything checked of a payment before anything is reserved (payment-preflight.ts), for the seller's price. */
  private async preflight(request: X402Terms, noteValue?: bigint): Promise<SellerOrder> {
    // An entry's amount is read before the pre-flight: a malformed one is refused by the schema, not here.
    return (await this.preflights.order("x402", request, BigInt(amountOf(request.accepted as ExactRequirement)), noteValue)) as SellerOrder;
  }

  /** Step 1, before anything is reserved or withdrawn: a failure here leaves the note untouched. */
  private async buildPayment(
    order: SellerOrder,
    resource: ResourceInfo | undefined,
    payer: Wallet,
    { window, nonce }: PayerAuthorization,
  ): Promise<SignedPayment> {
    const { accepted } = order;
    const payload = await buildPaymentPayload({ accepted, resource, payer, window, nonce }).catch((error: unknown) => {
      throw new RelayerError("INVALID_REQUEST", `Could not build the x402 payment for the seller's entry (${(error as Error).message}). Nothing was spent.`);
    });
    const { separator } = await this.preflights.token.read();
    if (authorizationSignerUnder(separator, payload.payload) !== payer.address) {
      throw new RelayerError("INTERNAL", "The payer's authorization does not recover to the payer under the token's domain separator. Nothing was spent.");
    }
    return { xPayment: encodeXPayment(payload), validBefore: Number(window.validBefore), nonce };
  }

  private paymentOf(result: SettledSpend, order: SellerOrder, payer: Wallet): X402Payment {
    const payment = result.lease.payment!;
    return {
      xPayment: payment.xPayment,
      validBefore: payment.validBefore,
      x402Version: x402VersionOf(order.accepted),
      payer: payer.address,
      sellerAmount: order.sellerAmount,
    };
  }
}

/** The window and nonce of a single-use payer's one authorization (x402's paymentNonceOf). */
interface PayerAuthorization {
  window: ValidityWindow;
  nonce: string;
}

/** A payment's window (payerWindow) and its nonce under a fresh salt. */
function newPayerAuthorization(accepted: ExactRequirement, clocks: PaymentClocks): PayerAuthorization & { salt: string } {
  const window = payerWindow(accepted, clocks);
  const salt = hexlify(randomBytes(32));
  return { window, salt, nonce: paymentNonceOf(accepted, window, salt) };
}

/**
 * The payment a settle-x402 quote fixed, its nonce derived again from the request's seller entry: for an entry other
 * than the quoted one it is another nonce, which the proof's context does not bind (ProvenSpends.admit refuses it).
 */
function quotedPayerAuthorization(quote: SignedQuote, accepted: ExactRequirement): PayerAuthorization {
  const { paymentSalt, paymentValidAfter, paymentValidBefore } = quote;
  if (paymentSalt === undefined || paymentValidAfter === undefined || paymentValidBefore === undefined) {
    throw new RelayerError("INVALID_REQUEST", "quote: not a settle-x402 quote (it fixes no payment). Ask quote-x402 for one and prove against it. Nothing was spent.");
  }
  const window = { validAfter: BigInt(paymentValidAfter), validBefore: BigInt(paymentValidBefore) };
  return { window, nonce: paymentNonceOf(accepted, window, paymentSalt) };
}

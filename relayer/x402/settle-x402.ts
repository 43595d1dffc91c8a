import { namePublicSignals, nullifierHashOf, type Note, type NoteSecrets, type WithdrawProof } from "../../sdk/index.js";
import {
  amountOf,
  authorizationSignerUnder,
  buildPaymentPayload,
  encodeXPayment,
  paymentNonceOf,
  validityWindow,
  type ValidityWindow,
  x402VersionOf,
  type ExactRequirement,
  type ResourceInfo,
} from "../../sdk/x402/index.js";
import { hexlify, randomBytes, type Wallet } from "ethers";
import type { AccessFeeGate, LabelEvidence } from "../buyer/access-fee-gate.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import { spendRecordOf, type Facilitator, type ProvenSpendResult, type SettledSpend, type SpendResult } from "../buyer/facilitator.js";
import { feeOf, grossForNet } from "../pricing/pricing.js";
import { isPrivate, privacyDisclosure } from "../pricing/privacy.js";
import type { SellerEntry } from "../schemas/settle-x402.js";
import type { SignedQuote } from "../settlement/quote.js";
import type { SignedPayment } from "../store/relayer-store.js";
import { payerWallet } from "./payer-keys.js";
import { SellerTermsCheck, type PaymentWindow } from "./seller-terms.js";
import { TokenDomainReader } from "./token-domain.js";

/** What every settle-x402 request names besides the note or the proof. */
export interface X402Terms {
  /** The seller's `exact` entry, as its 402 gave it (v1 or v2 shape). */
  accepted: SellerEntry;
  /** The v2 402's `resource`, echoed in a v2 payment. */
  resource?: ResourceInfo;
  acceptNotPrivate: boolean;
  agentId?: string;
  category?: string;
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

/** settle-x402-proof (docs/api.md 4.10): the agent's proof of a quote, and its refund note's precommitment. */
export interface X402ProvenRequest extends X402Terms {
  quote: SignedQuote;
  proof: WithdrawProof;
  /**
   * Poseidon(deriveRefundSecrets(note)), the precommitment the proof's refundCommitment was made with. A retry must
   * repeat it: it appears in no transaction, so a reader of the relay's calldata cannot be answered the payment.
   */
  refundPrecommitment: bigint;
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

export interface X402SettlerDeps {
  facilitator: Facilitator;
  chain: PoolChain;
  accessFee: AccessFeeGate;
  agents: AgentRegistry;
  payerKeySecret: string;
  /** The range of the seller's maxTimeoutSeconds this relayer pays (seller-terms.ts). */
  window: PaymentWindow;
  clock?: () => number;
}

/** A seller's entry once the pre-flight passed: what the payer pays it, and what leaves the note for that. */
interface SellerOrder {
  accepted: ExactRequirement;
  sellerAmount: bigint;
  /** sellerAmount plus the take. */
  gross: bigint;
  /** The lease terms that pin the seller (LeasedWithdrawalOrder.terms). */
  terms: (string | bigint)[];
}

/**
 * settle-x402 (docs/api.md 3.2 and 4.4, docs/design.md 5-7): pays an x402 seller through a fresh single-use payer. First the
 * pre-flight (seller-terms.ts): every term the seller's facilitator checks after funding is checked here. Then,
 * under the note's lease: build and sign the payer's EIP-3009 payment for the seller and recover its signer
 * against the token's domain separator, reserve, withdraw the gross amount to the payer by proof (the payer then
 * holds exactly the seller's amount; the take goes to the treasury), finalize. A retry replays the stored payment
 * and withdraws nothing. The proof is the relayer's from the note (settle), or the agent's (settleProven, after quote).
 */
export class X402Settler {
  private readonly token: TokenDomainReader;
  private readonly sellerTerms: SellerTermsCheck;

  constructor(private readonly deps: X402SettlerDeps) {
    this.token = new TokenDomainReader(deps.chain);
    this.sellerTerms = new SellerTermsCheck({ chain: deps.chain, token: this.token, window: deps.window });
  }

  async settle(request: X402SettleRequest): Promise<X402Settlement> {
    const { facilitator } = this.deps;
    const { note } = request;
    const order = await this.preflight(request, note.value);
    const nullifierHash = nullifierHashOf(note.nullifier);
    await this.deps.accessFee.assertAuthorized(nullifierHash, { kind: "note", label: note.label });
    const payer = payerWallet(this.deps.payerKeySecret, nullifierHash);
    const result = await facilitator.spend(note, {
      amount: order.gross,
      recipient: payer.address,
      terms: order.terms,
      changeSecrets: request.changeSecrets,
      buildPayment: async () => this.buildPayment(order, request.resource, payer, newPayerAuthorization(order.accepted, await this.paymentClock())),
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
    const { window, salt, nonce } = newPayerAuthorization(order.accepted, await this.paymentClock());
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
    await this.deps.accessFee.assertAuthorized(nullifierHash, labelEvidenceOf(request, order.gross - feeOf(order.gross, facilitator.takeBps)));
    const payer = payerWallet(this.deps.payerKeySecret, nullifierHash);
    const payment = quotedPayerAuthorization(quote, order.accepted);
    const result = await facilitator.spendProven(quote, request.proof, {
      route: "settle-x402",
      amount: order.gross,
      recipient: payer.address,
      payment: { nonce: payment.nonce, validBefore: payment.window.validBefore },
      // The refund precommitment is in no transaction: a retry must be the agent's, not a reader of the relay's calldata.
      terms: [...order.terms, request.refundPrecommitment],
      buildPayment: () => this.buildPayment(order, request.resource, payer, payment),
    });
    await facilitator.recordSpend({ nullifierHash, amount: order.sellerAmount, agentId: request.agentId }, result.replayed);
    return { ...result, ...this.paymentOf(result, order, payer) };
  }

  /**
   * Everything checked of a payment before anything is reserved: the seller's entry (seller-terms.ts), the invoice,
   * what the note must hold (when the relayer knows its value), the privacy acknowledgement and the agent's limits.
   */
  private async preflight(request: X402Terms, noteValue?: bigint): Promise<SellerOrder> {
    const { facilitator } = this.deps;
    const accepted = await this.sellerTerms.check(request.accepted);
    const sellerAmount = BigInt(amountOf(accepted));
    facilitator.checkInvoice({ payTo: accepted.payTo, amount: sellerAmount }, noteValue);
    const gross = grossForNet(sellerAmount, facilitator.takeBps);
    if (noteValue !== undefined && gross > noteValue) {
      throw new RelayerError(
        "INVALID_PAYMENT_AMOUNT",
        `The seller asks ${sellerAmount}; with the ${facilitator.takeBps} bps take the note must cover ${gross}, and it holds ${noteValue}. Use a note that covers it.`,
      );
    }
    await this.requirePrivacyAcknowledged(request.acceptNotPrivate);
    if (request.agentId !== undefined) {
      await this.deps.agents.check({ agentId: request.agentId, provider: accepted.payTo, amount: sellerAmount, category: request.category });
    }
    return {
      accepted,
      sellerAmount,
      gross,
      terms: ["x402", accepted.network, accepted.asset.toLowerCase(), accepted.payTo.toLowerCase(), sellerAmount],
    };
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
    const { separator } = await this.token.read();
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

  /** Below the privacy minimum the caller must say it accepts a payment that is not private (docs/api.md 4.4). */
  private async requirePrivacyAcknowledged(acceptNotPrivate: boolean): Promise<void> {
    if (acceptNotPrivate) return;
    const anonymitySet = await this.deps.facilitator.anonymitySet();
    if (!isPrivate(anonymitySet)) {
      throw new RelayerError("PRIVACY_NOT_ACKNOWLEDGED", `${privacyDisclosure(anonymitySet)} Pass acceptNotPrivate:true to pay anyway.`);
    }
  }

  /**
   * The clocks a payment's window must fit: this relayer's and the chain's. The seller's facilitator checks the window
   * against its own clock and simulates the transfer against the chain's, and a chain can run ahead of the wall clock
   * (a local node stamps each block at least a second after the last, so a burst of transactions puts it ahead).
   */
  private async paymentClock(): Promise<PaymentClocks> {
    const { chain } = this.deps;
    const latest = await chain.call(() => chain.provider.getBlock("latest"));
    return { wall: this.now(), chain: latest?.timestamp ?? this.now() };
  }

  private now(): number {
    return (this.deps.clock ?? (() => Date.now() / 1000))();
  }
}

/**
 * What an agent's settle-x402 proof shows of its note's label (AccessFeeGate.assertAuthorized): the refund commitment
 * the circuit made of the payout `payout`, the note's label and the refund precommitment the request names. A proof
 * whose public signals are malformed shows nothing (and is refused with its own error on the way).
 */
function labelEvidenceOf(request: X402ProvenRequest, payout: bigint): LabelEvidence {
  try {
    const { refundCommitment } = namePublicSignals(request.proof.publicSignals);
    return { kind: "proof", refundCommitment, payout, refundPrecommitment: request.refundPrecommitment };
  } catch {
    return { kind: "none" };
  }
}

/** The window and nonce of a single-use payer's one authorization (x402's paymentNonceOf). */
interface PayerAuthorization {
  window: ValidityWindow;
  nonce: string;
}

/** The wall clock and the chain's latest block time, in unix seconds. */
interface PaymentClocks {
  wall: number;
  chain: number;
}

/**
 * A payment's window and its nonce under a fresh salt: valid from the reference client's backdate of the earlier
 * clock until the seller's timeout after the later one, so that both the seller's facilitator and the chain take it.
 */
function newPayerAuthorization(accepted: ExactRequirement, { wall, chain }: PaymentClocks): PayerAuthorization & { salt: string } {
  const window = {
    validAfter: validityWindow(accepted, Math.min(wall, chain)).validAfter,
    validBefore: validityWindow(accepted, Math.max(wall, chain)).validBefore,
  };
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

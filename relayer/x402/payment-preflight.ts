import { validityWindow, type ValidityWindow } from "../../sdk/x402/index.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { Facilitator } from "../buyer/facilitator.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import { grossForNet } from "../pricing/pricing.js";
import { isPrivate, privacyDisclosure } from "../pricing/privacy.js";
import { SellerTermsCheck, type PaymentWindow, type SellerTermsEntry } from "./seller-terms.js";
import { TokenDomainReader } from "./token-domain.js";

/** What every payment to an x402 seller (settle-x402, a tab) names besides the note or the proof. */
export interface PayerTerms<E> {
  /** The seller's entry, as its 402 gave it. */
  accepted: E;
  acceptNotPrivate: boolean;
  agentId?: string;
  category?: string;
}

/** A seller's entry once the pre-flight passed: what the payer pays, and what leaves the note for that. */
export interface PayerOrder<E> {
  accepted: E & { maxTimeoutSeconds: number };
  /** What the pool pays for the seller: its price (settle-x402) or the tab's deposit. */
  sellerAmount: bigint;
  /** sellerAmount plus the take. */
  gross: bigint;
  /** The lease terms that pin the seller (LeasedWithdrawalOrder.terms). */
  terms: (string | bigint)[];
}

/** The wall clock and the chain's latest block time, in unix seconds. */
export interface PaymentClocks {
  wall: number;
  chain: number;
}

export interface PaymentPreflightDeps {
  facilitator: Facilitator;
  chain: PoolChain;
  agents: AgentRegistry;
  /** The range of the seller's maxTimeoutSeconds this relayer pays (seller-terms.ts). */
  window: PaymentWindow;
  clock?: () => number;
}

/**
 * What settle-x402 and a tab check before anything is reserved (docs/x402-interop.md, "Pre-flight"): the seller's
 * entry (seller-terms.ts), the amount against the relayer's minimum and the note (when the relayer knows its value),
 * the privacy acknowledgement and the agent's limits; and the clocks a payer's window must fit.
 */
export class PaymentPreflight {
  readonly token: TokenDomainReader;
  private readonly sellerTerms: SellerTermsCheck;

  constructor(private readonly deps: PaymentPreflightDeps) {
    this.token = new TokenDomainReader(deps.chain);
    this.sellerTerms = new SellerTermsCheck({ chain: deps.chain, token: this.token, window: deps.window });
  }

  /** The order of `sellerAmount` to `request.accepted`; `kind` tags the lease's terms with the route's kind. */
  async order<E extends SellerTermsEntry>(kind: string, request: PayerTerms<E>, sellerAmount: bigint, noteValue?: bigint): Promise<PayerOrder<E>> {
    const { facilitator } = this.deps;
    const accepted = await this.sellerTerms.check(request.accepted);
    facilitator.checkInvoice({ payTo: accepted.payTo, amount: sellerAmount }, noteValue);
    const gross = grossForNet(sellerAmount, facilitator.takeBps);
    if (noteValue !== undefined && gross > noteValue) {
      throw new RelayerError(
        "INVALID_PAYMENT_AMOUNT",
        `The seller asks ${sellerAmount}; with the ${facilitator.takeBps} bps take the note must cover ${gross}, and it holds ${noteValue}. Use a note that covers it.`,
      );
    }
    await this.requirePrivacyAcknowledged(request.acceptNotPrivate, gross);
    if (request.agentId !== undefined) {
      await this.deps.agents.check({ agentId: request.agentId, provider: accepted.payTo, amount: sellerAmount, category: request.category });
    }
    return { accepted, sellerAmount, gross, terms: [kind, accepted.network, accepted.asset.toLowerCase(), accepted.payTo.toLowerCase(), sellerAmount] };
  }

  /**
   * The clocks a payment's window must fit: this relayer's and the chain's. The seller's facilitator checks the window
   * against its own clock and simulates the transfer against the chain's, and a chain can run ahead of the wall clock
   * (a local node stamps each block at least a second after the last, so a burst of transactions puts it ahead).
   */
  async clocks(): Promise<PaymentClocks> {
    const { chain } = this.deps;
    const latest = await chain.call(() => chain.provider.getBlock("latest"));
    const wall = (this.deps.clock ?? (() => Date.now() / 1000))();
    return { wall, chain: latest?.timestamp ?? wall };
  }

  /**
   * Below the privacy minimum the caller must say it accepts a payment that is not private (docs/api.md 4.4): judged
   * by this payment's own anonymity set, of the deposits that hold what it withdraws (`gross`).
   */
  private async requirePrivacyAcknowledged(acceptNotPrivate: boolean, gross: bigint): Promise<void> {
    if (acceptNotPrivate) return;
    const anonymitySet = await this.deps.facilitator.anonymitySet(gross);
    if (!isPrivate(anonymitySet)) {
      throw new RelayerError("PRIVACY_NOT_ACKNOWLEDGED", `${privacyDisclosure(anonymitySet)} Pass acceptNotPrivate:true to pay anyway.`);
    }
  }
}

/**
 * A payer's window: valid from the reference client's backdate of the earlier clock until the seller's timeout after
 * the later one, so that both the seller's facilitator and the chain take it.
 */
export function payerWindow(accepted: { maxTimeoutSeconds: number }, { wall, chain }: PaymentClocks): ValidityWindow {
  return {
    validAfter: validityWindow(accepted, Math.min(wall, chain)).validAfter,
    validBefore: validityWindow(accepted, Math.max(wall, chain)).validBefore,
  };
}

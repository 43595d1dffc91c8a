import type { SettleAnswer, SettleProofAnswer } from "../client/facilitator-client.js";
import { grossForNet } from "../fees/relay-fee.js";
import { amountOf, selectExactRequirement, whyNoExactRequirement, x402VersionOf, type ExactRequirement, type PaymentRequired } from "../x402/index.js";
import type { RequirementPayment } from "./agent-options.js";
import { custodial, type AgentWallet } from "./agent-wallet.js";
import { X402AgentError } from "./errors.js";
import type { X402Settlement } from "./payment-refusals.js";

/**
 * The pool pays a seller's `exact` entry itself (docs/api.md 4.4, 4.10): a note's withdrawal has the pool authorize the
 * one EIP-3009 transfer of the seller's price to its payTo, which the seller's facilitator executes from the pool. The
 * agent proves the withdrawal itself where the facilitator relays its proofs, else sends the note (custodial). Also the
 * generic settle of an invoice (docs/api.md 4.3).
 */
export class PoolExactPayments {
  constructor(private readonly wallet: AgentWallet) {}

  /** The seller's exact entry in the facilitator's USDC on its chain; NO_USABLE_ENTRY when `required` offers none. */
  usableEntry(required: PaymentRequired, url: string): ExactRequirement {
    const { network } = this.wallet.options;
    const accepted = selectExactRequirement(required, network);
    if (accepted === undefined) throw new X402AgentError("NO_USABLE_ENTRY", `${url}: ${whyNoExactRequirement(required, network)} Nothing was paid.`);
    return accepted;
  }

  /**
   * Pays a seller's exact entry out of the pool through settle-x402 (the agent proves where it can). Every cap, the
   * budget and `preflight` come before any note moves. Returns the settlement; its xPayment is the payment the seller
   * takes, from the pool.
   */
  async payRequirement(accepted: ExactRequirement, payment: RequirementPayment): Promise<X402Settlement> {
    const { wallet } = this;
    const { url, resource } = payment;
    const price = BigInt(amountOf(accepted));
    wallet.emit({ step: "payment-required", url, x402Version: x402VersionOf(accepted), amount: price.toString(), payTo: accepted.payTo, network: accepted.network });
    wallet.checkPrice(url, price, payment.maxPaymentAtomic);
    await payment.preflight?.();

    const terms = await wallet.terms();
    const gross = grossForNet(price, terms.takeBps);
    const { facilitator, acceptNotPrivate } = wallet.options;
    const fields = { accepts: accepted, ...(resource !== undefined && { resource }), acceptNotPrivate: acceptNotPrivate ?? false, ...wallet.agentFields() };
    return wallet.payFromNotes<X402Settlement>(
      gross,
      async (note) => {
        if (terms.provenThrough === undefined) return custodial(note, (secrets) => facilitator.settleX402({ ...fields, ...secrets }));
        const expected = { route: "settle-x402", withdrawnValue: gross, feeBps: terms.takeBps, processooor: terms.provenThrough, recipient: accepted.payTo, accepted } as const;
        const { body, change } = await wallet.proveSpend(note, expected, fields);
        return { send: () => facilitator.settleX402Proof(body), changeNote: () => change };
      },
      (settled) => BigInt(settled.gross),
    );
  }

  /**
   * The generic settle (docs/api.md 4.3): `maxAmountRequired` to `payTo`, the take inside the amount (the seller
   * receives it less the take). Returns the settlement, whose txHash the seller checks on chain.
   */
  async settleInvoice(url: string, invoice: { payTo: string; maxAmountRequired: string }): Promise<SettleAnswer | SettleProofAnswer> {
    const { wallet } = this;
    const amount = BigInt(invoice.maxAmountRequired);
    wallet.checkPrice(url, amount);
    const terms = await wallet.terms();
    const { facilitator } = wallet.options;
    const fields = { paymentDetails: invoice, ...wallet.agentFields() };
    return wallet.payFromNotes<SettleAnswer | SettleProofAnswer>(
      amount,
      async (note) => {
        if (terms.provenThrough === undefined) return custodial(note, ({ serviceDeposit }) => facilitator.settle({ ...fields, serviceDeposit }));
        const expected = { route: "settle", withdrawnValue: amount, feeBps: terms.takeBps, processooor: terms.provenThrough, recipient: invoice.payTo } as const;
        const { body, change } = await wallet.proveSpend(note, expected, fields);
        return { send: () => facilitator.settleProof(body), changeNote: () => change };
      },
      (settled) => BigInt(settled.amount),
    );
  }
}

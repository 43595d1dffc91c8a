import { noteToWire } from "../../sdk/client/facilitator-client.js";
import type { AgentPublicView, AgentView } from "../agents/registry.js";
import type { ProvenSpendResult, SettledSpend, SpendResult } from "../buyer/facilitator.js";
import type { SignedQuote } from "../settlement/quote.js";
import type { OpenedTab, TabQuote } from "../x402/open-tab.js";
import type { X402Payment, X402ProvenSettlement, X402Settlement } from "../x402/settle-x402.js";

/** The fields every spend response shares, whoever proved it. */
function settledToWire(result: SettledSpend) {
  return { txHash: result.txHash, amount: result.amount.toString(), fee: result.fee.toString(), replayed: result.replayed, privacy: result.privacy };
}

/** The fields every custodial spend response shares (settle, withdraw, x402-pay): the change note the relayer knows. */
export function spendToWire(result: SpendResult) {
  return {
    ...settledToWire(result),
    remainingValue: result.remainingValue.toString(),
    ...(result.nextDeposit === undefined ? {} : { nextDeposit: noteToWire(result.nextDeposit) }),
    proofTimeMs: result.proofTimeMs,
  };
}

/** A non-custodial spend's answer: of the change note only its commitment. */
export function provenSpendToWire(result: ProvenSpendResult) {
  return { ...settledToWire(result), changeCommitment: result.changeCommitment.toString() };
}

/** settle-x402's answer: the payment for the seller, and the spend that funded its payer. */
export function x402SettlementToWire(settlement: X402Settlement) {
  const { remainingValue, nextDeposit, proofTimeMs, ...spend } = spendToWire(settlement);
  return { ...x402PaymentToWire(settlement, spend), remainingValue, ...(nextDeposit === undefined ? {} : { nextDeposit }), proofTimeMs };
}

/** settle-x402-proof's answer: settle-x402's, with the change commitment instead of the change note. */
export function x402ProvenSettlementToWire(settlement: X402ProvenSettlement) {
  const { changeCommitment, ...spend } = provenSpendToWire(settlement);
  return { ...x402PaymentToWire(settlement, spend), changeCommitment };
}

function x402PaymentToWire(payment: X402Payment, { txHash, amount: gross, ...spend }: ReturnType<typeof settledToWire>) {
  return {
    xPayment: payment.xPayment,
    x402Version: payment.x402Version,
    payer: payment.payer,
    fundingTxHash: txHash,
    amount: payment.sellerAmount.toString(),
    gross,
    validBefore: payment.validBefore,
    ...spend,
  };
}

/** quote-tab's answer: the quote, and the channel and lifetime it binds. */
export function tabQuoteToWire({ quote, payer, channelConfig, channelId, reclaimableAfter }: TabQuote) {
  return { quote: quoteToWire(quote), payer, channelConfig, channelId, reclaimableAfter: Number(reclaimableAfter) };
}

/** open-tab's answer: the channel and the spend whose relay deposited into it. */
export function openedTabToWire(tab: OpenedTab) {
  const { txHash, amount: gross, ...spend } = provenSpendToWire(tab);
  const { payer, channelConfig, channelId, reclaimableAfter } = tab;
  return { payer, channelConfig, channelId, reclaimableAfter: Number(reclaimableAfter), fundingTxHash: txHash, gross, ...spend };
}

/** A quote with its numbers as decimal strings (QuoteWireSchema). */
export function quoteToWire(quote: SignedQuote) {
  return {
    ...quote,
    nullifierHash: quote.nullifierHash.toString(),
    scope: quote.scope.toString(),
    feeBps: Number(quote.feeBps),
    withdrawnValue: quote.withdrawnValue.toString(),
    fee: quote.fee.toString(),
    context: quote.context.toString(),
    stateRoot: quote.stateRoot.toString(),
    aspRoot: quote.aspRoot.toString(),
    ...(quote.authorizedNullifierHash !== undefined && { authorizedNullifierHash: quote.authorizedNullifierHash.toString() }),
  };
}

/** An agent as anyone may see it: no owner, no spend. */
export function agentPublicToWire(agent: AgentPublicView) {
  return {
    id: agent.id,
    name: agent.name,
    publicKey: agent.publicKey,
    limits: { perTransactionAtomic: agent.perTransactionLimit.toString(), dailyAtomic: agent.dailyLimit.toString() },
    providerWhitelist: agent.providerWhitelist,
    categories: agent.categories,
    createdAt: agent.createdAt,
    prototype: true as const,
  };
}

/** An agent as the holder of its key sees it. */
export function agentToWire(agent: AgentView) {
  return {
    ...agentPublicToWire(agent),
    ownerWallet: agent.ownerWallet,
    spend: {
      totalAtomic: agent.spend.totalSpent.toString(),
      todayAtomic: agent.spend.spentToday.toString(),
      transactionCount: agent.spend.transactionCount,
    },
  };
}

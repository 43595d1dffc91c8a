import { noteToWire } from "../../sdk/client/facilitator-client.js";
import type { AgentPublicView, AgentView } from "../agents/registry.js";
import type { SpendResult } from "../facilitator.js";
import type { X402Settlement } from "../x402/settle-x402.js";

/** The fields every spend response shares (settle, withdraw, x402-pay). */
export function spendToWire(result: SpendResult) {
  return {
    txHash: result.txHash,
    amount: result.amount.toString(),
    fee: result.fee.toString(),
    remainingValue: result.remainingValue.toString(),
    ...(result.nextDeposit === undefined ? {} : { nextDeposit: noteToWire(result.nextDeposit) }),
    proofTimeMs: result.proofTimeMs,
    replayed: result.replayed,
    privacy: result.privacy,
  };
}

/** settle-x402's answer: the payment for the seller, and the spend that funded its payer. */
export function x402SettlementToWire(settlement: X402Settlement) {
  const { amount: gross, ...spend } = spendToWire(settlement);
  return {
    xPayment: settlement.xPayment,
    x402Version: settlement.x402Version,
    payer: settlement.payer,
    fundingTxHash: spend.txHash,
    amount: settlement.sellerAmount.toString(),
    gross,
    fee: spend.fee,
    remainingValue: spend.remainingValue,
    ...(spend.nextDeposit === undefined ? {} : { nextDeposit: spend.nextDeposit }),
    validBefore: settlement.validBefore,
    proofTimeMs: spend.proofTimeMs,
    replayed: spend.replayed,
    privacy: spend.privacy,
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

import type { SettleResponse, VerifyResponse } from "@x402/core/types";
import { SHIELDED_REASONS } from "./shielded-reasons.js";

/**
 * The x402 answers of a facilitator that reached no verdict on a payment (the chain, a store or a scheme failed, or
 * the facilitator was not reached at all): nothing moved by it, and the same payment presented again is answered on
 * its merits. `shielded_facilitator_unavailable` is a retryable reason (SHIELDED_RETRYABLE_REASONS), never a refusal.
 */
const outageMessage = (why: string) => `The seller's facilitator cannot verify or settle now (${why}); nothing moved. Present the same payment again.`;

export function verifyUnavailable(why: string, payer?: string): VerifyResponse {
  return { isValid: false, invalidReason: SHIELDED_REASONS.facilitatorUnavailable, invalidMessage: outageMessage(why), ...(payer !== undefined && { payer }) };
}

export function settleUnavailable(network: string, why: string, payer?: string): SettleResponse {
  return {
    success: false,
    errorReason: SHIELDED_REASONS.facilitatorUnavailable,
    errorMessage: outageMessage(why),
    transaction: "",
    network: network as SettleResponse["network"],
    ...(payer !== undefined && { payer }),
  };
}

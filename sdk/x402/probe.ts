import { Wallet } from "ethers";
import { buildPaymentPayload, validityWindow } from "./payload.js";
import { readPaymentRequired } from "./payment-required.js";
import type { ExactRequirement, PaymentPayload, ResourceInfo } from "./schemas.js";

export type ProbeVerdict = "compatible" | "incompatible";

/**
 * x402 verifiers refuse a payment with a snake_case reason code (the protocol's error codes, e.g. the reference
 * facilitator's "invalid_exact_evm_signature"). A seller that never looked at the payment answers in prose
 * instead: "Payment required" (v2 reference seller), "X-PAYMENT header is required" (v1).
 */
const VERIFICATION_REASON = /^[a-z][a-z0-9]*(_[a-z0-9]+)+$/;

/**
 * docs/api.md 1, step 1: the seller's answer to a probe payment (buildProbePayment). Compatible when it is a 402 whose
 * x402 details (v2 PAYMENT-REQUIRED header or v1 JSON body) name a verification failure: the seller read the
 * payment and had an x402 verifier reject it. Anything else is incompatible: a generic 402 without x402
 * details, an x402 402 that did not read the payment, any other status. Consumes the response body.
 */
export async function classifyProbeResponse(response: Response): Promise<ProbeVerdict> {
  if (response.status !== 402) return "incompatible";
  const error = (await readPaymentRequired(response))?.error;
  return error !== undefined && VERIFICATION_REASON.test(error) ? "compatible" : "incompatible";
}

/**
 * A payment for `accepted` that is well formed but whose signature is invalid: signed by one throwaway key for
 * another throwaway address. It moves nothing, and a seller's verifier rejects it for the signature alone.
 */
export async function buildProbePayment(accepted: ExactRequirement, resource?: ResourceInfo): Promise<PaymentPayload> {
  const payment = await buildPaymentPayload({
    accepted,
    resource,
    payer: Wallet.createRandom(),
    window: validityWindow(accepted, Date.now() / 1000),
  });
  payment.payload.authorization.from = Wallet.createRandom().address;
  return payment;
}

import { decodePaymentSignatureHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { PaymentPayloadV1Schema } from "@x402/core/schemas";
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { PaymentPayloadV1, PaymentRequirementsV1 } from "@x402/core/types/v1";
import type { NextFunction, Request, Response } from "express";

/**
 * Glue: @x402/express 2.27 serves only v2 (its 402 is always `x402Version: 2` in PAYMENT-REQUIRED, it reads
 * only PAYMENT-SIGNATURE, and it matches payments by v2's `accepted`). This middleware speaks the v1 wire the
 * way the v1 reference middleware (x402-express 0.x) did, from reference parts: the v1 types, the header codec
 * and PaymentPayloadV1Schema of @x402/core, and the reference HTTPFacilitatorClient, through which the
 * reference facilitator's v1 `exact` EVM scheme does all verification and settlement.
 *
 * - No X-PAYMENT: 402 `{x402Version:1, error:"X-PAYMENT header is required", accepts:[requirements]}`.
 * - A payment the facilitator rejects: 402 `{x402Version:1, error:<invalidReason>, accepts, payer}`.
 * - A valid one is settled before the handler runs (the demo handler cannot fail), and the handler's response
 *   carries the settlement, base64 JSON, in X-PAYMENT-RESPONSE.
 */
export function v1PaymentMiddleware(
  facilitator: FacilitatorClient,
  requirementsFor: (request: Request) => PaymentRequirementsV1,
) {
  return async (request: Request, response: Response, next: NextFunction): Promise<void> => {
    const requirements = requirementsFor(request);
    const refuse = (error: string, payer?: string) => {
      response.status(402).json({ x402Version: 1, error, accepts: [requirements], ...(payer !== undefined && { payer }) });
    };

    const header = request.header("X-PAYMENT");
    if (header === undefined) return refuse("X-PAYMENT header is required");
    const payment = decodePayment(header);
    if (payment === undefined) return refuse("Invalid or malformed payment header");
    if (payment.scheme !== requirements.scheme || payment.network !== requirements.network) {
      return refuse("Unable to find matching payment requirements");
    }

    // The reference client is typed for v2 shapes only; on the wire it forwards any version's objects as they are.
    const [asPayload, asRequirements] = [payment as unknown as PaymentPayload, requirements as unknown as PaymentRequirements];
    const verified = await facilitator.verify(asPayload, asRequirements);
    if (!verified.isValid) return refuse(verified.invalidReason ?? "invalid_payment", verified.payer);
    const settled = await facilitator.settle(asPayload, asRequirements);
    if (!settled.success) return refuse(settled.errorReason ?? "settlement_failed", settled.payer);
    response.setHeader("X-PAYMENT-RESPONSE", encodePaymentResponseHeader(settled));
    next();
  };
}

function decodePayment(header: string): PaymentPayloadV1 | undefined {
  try {
    const parsed = PaymentPayloadV1Schema.safeParse(decodePaymentSignatureHeader(header));
    return parsed.success ? (parsed.data as PaymentPayloadV1) : undefined;
  } catch {
    return undefined;
  }
}

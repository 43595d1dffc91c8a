import { z } from "zod";

/**
 * POST /api/seller/verify and /api/seller/settle (docs/api.md 4.9): x402's facilitator request, as the reference
 * HTTPFacilitatorClient sends it. The payment and the entry are checked field by field by the scheme that takes them
 * (the shielded-proof verification of seller/shielded-payments.ts, or @x402/evm's reference one for a plain payment,
 * whose payload PlainExactPayloadSchema checks first), which answer x402's reasons for what they refuse.
 */
export const SellerFacilitatorRequestSchema = z.object({
  x402Version: z.literal(2),
  paymentPayload: z.looseObject({ x402Version: z.literal(2), accepted: z.looseObject({}), payload: z.looseObject({}) }),
  paymentRequirements: z.looseObject({ scheme: z.string(), network: z.string() }),
});

const text = z.string().min(1);

/**
 * A plain `exact` payment's payload as @x402/evm's facilitator scheme reads it (EIP-3009, or Permit2): checked before
 * it is handed over, whose reads of a missing field would throw instead of refusing.
 */
export const PlainExactPayloadSchema = z.union([
  z.looseObject({
    signature: text,
    authorization: z.looseObject({ from: text, to: text, value: text, validAfter: text, validBefore: text, nonce: text }),
  }),
  z.looseObject({
    signature: text,
    permit2Authorization: z.looseObject({
      from: text,
      permitted: z.looseObject({ token: text, amount: text }),
      spender: text,
      nonce: text,
      deadline: text,
      witness: z.looseObject({ to: text, validAfter: text }),
    }),
  }),
]);

/** x402's VerifyResponse. */
export const SellerVerifyResponseSchema = z.object({
  isValid: z.boolean(),
  invalidReason: z.string().optional(),
  invalidMessage: z.string().optional(),
  payer: z.string().optional(),
});

/** x402's SettleResponse: `transaction` is the one that paid payTo, whoever sent it; empty when none did. */
export const SellerSettleResponseSchema = z.object({
  success: z.boolean(),
  errorReason: z.string().optional(),
  errorMessage: z.string().optional(),
  payer: z.string().optional(),
  transaction: z.string(),
  network: z.string(),
});

/** x402's SupportedResponse: the kinds this facilitator verifies and settles, and who signs its transactions. */
export const SellerSupportedResponseSchema = z.object({
  kinds: z.array(z.object({ x402Version: z.literal(2), scheme: z.literal("exact"), network: z.string(), extra: z.record(z.string(), z.unknown()) })),
  extensions: z.array(z.string()),
  signers: z.record(z.string(), z.array(z.string())),
});

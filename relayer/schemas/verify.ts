import { z } from "zod";
import { ServiceDepositSchema } from "./note.js";
import { PaymentDetailsSchema } from "./payment.js";

/** POST /api/facilitator/verify (docs/api.md 4.2). */
export const VerifyRequestSchema = z.object({ paymentDetails: PaymentDetailsSchema, serviceDeposit: ServiceDepositSchema }).strict();

/** `reason` is one of VERIFY_REASONS when `valid` is false. */
export const VerifyResponseSchema = z
  .object({
    valid: z.boolean(),
    anonymitySet: z.number().int().nullable(),
    reason: z.string().optional(),
    message: z.string().optional(),
  })
  .strict();

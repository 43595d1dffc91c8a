import { z } from "zod";
import { FieldElementSchema } from "../../sdk/schema/primitives.js";

/** A note value: a canonical non-negative integer string below 2^128 (a change note may hold 0). */
export const NoteValueSchema = z
  .string()
  .regex(/^(0|[1-9][0-9]*)$/, "must be a canonical integer string of atomic USDC")
  .transform((s) => BigInt(s))
  .refine((x) => x < 1n << 128n, { message: "must be below 2^128" });

/**
 * docs/api.md 2.2 `serviceDeposit`: the note, all values as strings. `nullifier` and `secret` are bearer credentials;
 * they are never logged or stored.
 */
export const ServiceDepositSchema = z
  .object({
    nullifier: FieldElementSchema,
    secret: FieldElementSchema,
    value: NoteValueSchema,
    label: FieldElementSchema,
    commitment: FieldElementSchema,
  })
  .strict();

export type ServiceDeposit = z.infer<typeof ServiceDepositSchema>;

/** The wire form of a note in responses (`nextDeposit`): the same fields, as strings. */
export const NoteResponseSchema = z
  .object({ nullifier: z.string(), secret: z.string(), value: z.string(), label: z.string(), commitment: z.string() })
  .strict();
export type NoteResponse = z.infer<typeof NoteResponseSchema>;

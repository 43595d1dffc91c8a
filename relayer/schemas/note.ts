import { z } from "zod";
import { noteWithCommitment, type NoteForm } from "../../sdk/note/note.js";
import { FieldElementSchema } from "../../sdk/schema/primitives.js";

/** A note value: a canonical non-negative integer string below 2^128 (a change note may hold 0). */
export const NoteValueSchema = z
  .string()
  .regex(/^(0|[1-9][0-9]*)$/, "must be a canonical integer string of atomic USDC")
  .transform((s) => BigInt(s))
  .refine((x) => x < 1n << 128n, { message: "must be below 2^128" });

/** docs/api.md 2.2 `serviceDeposit`'s fields: the note, all values as strings. */
export const SERVICE_DEPOSIT_FIELDS = {
  nullifier: FieldElementSchema,
  secret: FieldElementSchema,
  value: NoteValueSchema,
  label: FieldElementSchema,
  commitment: FieldElementSchema,
};

/**
 * The note's form, which its commitment says (a refund note's leaf is made another way, docs/design.md 2). Parts
 * that make neither form are refused when the note is spent (assertNoteConsistent), as before there were two.
 */
export function withNoteForm<T extends { nullifier: bigint; secret: bigint; value: bigint; label: bigint; commitment: bigint }>(
  note: T,
): T & { form: NoteForm } {
  return { ...note, form: noteWithCommitment(note.value, note.label, note, note.commitment)?.form ?? "deposit" };
}

/**
 * docs/api.md 2.2 `serviceDeposit`: the note. `nullifier` and `secret` are bearer credentials; they are never logged
 * or stored.
 */
export const ServiceDepositSchema = z.object(SERVICE_DEPOSIT_FIELDS).strict().transform(withNoteForm);

export type ServiceDeposit = z.infer<typeof ServiceDepositSchema>;

/** The wire form of a note in responses (`nextDeposit`): the same fields, as strings. */
export const NoteResponseSchema = z
  .object({ nullifier: z.string(), secret: z.string(), value: z.string(), label: z.string(), commitment: z.string() })
  .strict();
export type NoteResponse = z.infer<typeof NoteResponseSchema>;

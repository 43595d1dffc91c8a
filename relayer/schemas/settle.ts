import { z } from "zod";
import { AddressSchema, AtomicAmountSchema, FieldElementSchema } from "../../sdk/schema/primitives.js";
import { NoteResponseSchema, SERVICE_DEPOSIT_FIELDS, ServiceDepositSchema, withNoteForm } from "./note.js";
import { AgentFieldsSchema, PaymentDetailsSchema } from "./payment.js";
import { PrivacyBlockSchema } from "./privacy.js";
import { WithdrawProofSchema } from "./proof.js";
import { QuoteSchema } from "./quote.js";

/** POST /api/facilitator/settle (docs/api.md 4.3). */
export const SettleRequestSchema = z
  .object({ paymentDetails: PaymentDetailsSchema, serviceDeposit: ServiceDepositSchema, ...AgentFieldsSchema })
  .strict();

const atomic = z.string().regex(/^[0-9]+$/);
const txHash = z.string().regex(/^0x[0-9a-fA-F]{64}$/);

export const SettleResponseSchema = z
  .object({
    settled: z.literal(true),
    txHash,
    /** The invoice amount that left the pool. */
    amount: atomic,
    /** The per-settle take paid to the treasury out of `amount`; the recipient got amount - fee. */
    fee: atomic,
    remainingValue: atomic,
    nextDeposit: NoteResponseSchema.optional(),
    /** Null when the settlement was recovered from the chain after the relayer that proved it stopped. */
    proofTimeMs: z.number().int().nullable(),
    /** True when this answers a retry of an identical request from its lease: nothing was withdrawn now. */
    replayed: z.boolean(),
    privacy: PrivacyBlockSchema,
  })
  .strict();

/** POST /api/facilitator/quote (docs/api.md 4.10): settle's invoice, and the note by its nullifier hash only. */
export const QuoteRequestSchema = z
  .object({ paymentDetails: PaymentDetailsSchema, nullifierHash: FieldElementSchema, ...AgentFieldsSchema })
  .strict();

/** POST /api/facilitator/settle-proof (docs/api.md 4.10): settle with the agent's proof of a quote instead of the note. */
export const SettleProofRequestSchema = z
  .object({ paymentDetails: PaymentDetailsSchema, quote: QuoteSchema, proof: WithdrawProofSchema, ...AgentFieldsSchema })
  .strict();

/** The relayer never saw the note: no remaining value, no change note, only the change commitment the proof inserts. */
export const SettleProofResponseSchema = SettleResponseSchema.omit({ remainingValue: true, nextDeposit: true, proofTimeMs: true })
  .extend({ changeCommitment: atomic })
  .strict();

/** POST /api/withdraw (docs/api.md 4.6): the note's fields at top level; the full note when amountAtomic is absent. */
export const WithdrawRequestSchema = z
  .object({ ...SERVICE_DEPOSIT_FIELDS, recipient: AddressSchema, amountAtomic: AtomicAmountSchema.optional() })
  .strict()
  .transform(withNoteForm);

export const WithdrawResponseSchema = SettleResponseSchema.omit({ settled: true }).extend({ withdrawn: z.literal(true), recipient: z.string() }).strict();

/** POST /api/x402-pay (docs/api.md 4.7): one-call direct private payment of `amountAtomic` to `provider`. */
export const X402PayRequestSchema = z
  .object({ ...SERVICE_DEPOSIT_FIELDS, provider: AddressSchema, amountAtomic: AtomicAmountSchema })
  .strict()
  .transform(withNoteForm);

export const X402PayResponseSchema = SettleResponseSchema.omit({ settled: true }).extend({ paid: z.literal(true), provider: z.string() }).strict();

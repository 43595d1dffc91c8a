import { z } from "zod";
import { Bytes32Schema, FieldElementSchema } from "../../sdk/schema/primitives.js";
import { ExactRequirementV1Schema, ExactRequirementV2Schema, ResourceInfoSchema } from "../../sdk/x402/schemas.js";
import { NoteResponseSchema, ServiceDepositSchema } from "./note.js";
import { AgentFieldsSchema } from "./payment.js";
import { PrivacyBlockSchema } from "./privacy.js";
import { WithdrawProofSchema } from "./proof.js";
import { QuoteSchema } from "./quote.js";

// docs/api.md 2.3 lists an entry's scheme, network, asset, payTo and amount. Sellers also send maxTimeoutSeconds (60 s
// when absent, the reference sellers' default) and the token's EIP-712 domain in `extra`. `extra` is read loosely
// here so that an entry naming no domain gets the shared rule's answer (x402/eip712-domain.ts), not a schema
// error. The entry is otherwise kept as sent: a v2 payment echoes it to the seller.
const sellerFields = { extra: z.looseObject({}).optional() };

/** The seller's chosen `accepts` entry: v2 (`amount`) or v1 (`maxAmountRequired`) shape. */
export const SellerEntrySchema = z.union([
  ExactRequirementV2Schema.partial({ maxTimeoutSeconds: true }).extend(sellerFields),
  ExactRequirementV1Schema.partial({ maxTimeoutSeconds: true }).extend(sellerFields),
]);
export type SellerEntry = z.infer<typeof SellerEntrySchema>;

/** POST /api/facilitator/settle-x402 (docs/api.md 4.4). */
export const SettleX402RequestSchema = z
  .object({
    accepts: SellerEntrySchema,
    /** A v2 402's `resource`, carried back in the v2 payment; v1 needs none. */
    resource: ResourceInfoSchema.optional(),
    serviceDeposit: ServiceDepositSchema,
    /** Change-note secrets pre-derived from the agent's seed; derived from the spent note when absent. */
    nextNullifier: FieldElementSchema.optional(),
    nextSecret: FieldElementSchema.optional(),
    /** Required `true` while the anonymity set is below the privacy minimum. */
    acceptNotPrivate: z.boolean().default(false),
    ...AgentFieldsSchema,
  })
  .strict()
  .refine((request) => (request.nextNullifier === undefined) === (request.nextSecret === undefined), {
    path: ["nextSecret"],
    message: "send nextNullifier and nextSecret together, or neither",
  });

const atomic = z.string().regex(/^[0-9]+$/);

export const SettleX402ResponseSchema = z
  .object({
    settled: z.literal(true),
    /** base64 x402 payment; send it to the seller as X-PAYMENT and as PAYMENT-SIGNATURE. */
    xPayment: z.string(),
    /** The version of the seller's entry, and so of the payment. */
    x402Version: z.union([z.literal(1), z.literal(2)]),
    /** The payment's `from`: the pool, which authorized exactly `amount` to the seller by the relay. */
    payer: z.string(),
    fundingTxHash: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
    /** The seller's amount, which the pool's authorization transfers. */
    amount: atomic,
    /** What left the pool: amount + fee. */
    gross: atomic,
    /** The per-settle take, paid to the treasury. */
    fee: atomic,
    remainingValue: atomic,
    nextDeposit: NoteResponseSchema.optional(),
    /** The authorization's validBefore (unix seconds): the seller must use it before then. */
    validBefore: z.number().int(),
    proofTimeMs: z.number().int().nullable(),
    replayed: z.boolean(),
    privacy: PrivacyBlockSchema,
  })
  .strict();

/** POST /api/facilitator/quote-x402 (docs/api.md 4.10): settle-x402's fields, the note by its nullifier hash only. */
export const QuoteX402RequestSchema = z
  .object({
    accepts: SellerEntrySchema,
    resource: ResourceInfoSchema.optional(),
    nullifierHash: FieldElementSchema,
    acceptNotPrivate: z.boolean().default(false),
    ...AgentFieldsSchema,
  })
  .strict();

/** POST /api/facilitator/settle-x402-proof (docs/api.md 4.10): settle-x402 with the agent's proof of a quote instead of the note. */
export const SettleX402ProofRequestSchema = z
  .object({
    accepts: SellerEntrySchema,
    resource: ResourceInfoSchema.optional(),
    quote: QuoteSchema,
    proof: WithdrawProofSchema,
    /**
     * 32 random bytes the agent makes for this request: a retry that sends them again is answered the payment, which
     * a copy of the relayed proof alone is not. Derived from nothing of the note's, so it links nothing to its deposit.
     */
    retryKey: Bytes32Schema,
    acceptNotPrivate: z.boolean().default(false),
    ...AgentFieldsSchema,
  })
  .strict();

/** The relayer never saw the note: no remaining value, no change note, only the change commitment the proof inserts. */
export const SettleX402ProofResponseSchema = SettleX402ResponseSchema.omit({ remainingValue: true, nextDeposit: true, proofTimeMs: true })
  .extend({ changeCommitment: atomic })
  .strict();

import { z } from "zod";
import { AtomicAmountSchema, Bytes32Schema, Caip2Schema, FieldElementSchema } from "../../sdk/schema/primitives.js";
import { WithdrawProofSchema } from "./proof.js";
import { QuoteSchema } from "./quote.js";
import { SettleProofResponseSchema } from "./settle.js";

/** POST /api/facilitator/authorize (docs/api.md 4.5). */
export const AuthorizeRequestSchema = z
  .object({ network: Caip2Schema, accessTokenTxHash: Bytes32Schema, nullifierHash: FieldElementSchema })
  .strict();

export const AuthorizeResponseSchema = z.object({ authorized: z.boolean(), error: z.string().optional() }).strict();

/**
 * What an access fee paid out of the note withdraws from it, all to the treasury: at least the 402's
 * `noteWithdrawalAtomic` (the fee, and in paid mode its relay's gas); default `requiredFeeAtomic`.
 */
const NoteWithdrawalSchema = AtomicAmountSchema.optional();

/**
 * POST /api/facilitator/quote-access-fee: an access fee paid out of the note of `nullifierHash`, authorizing the note
 * of `authorizedNullifierHash` (the agent's change note's, sdk deriveChangeSecrets). The note is named by its
 * nullifier hash only.
 */
export const QuoteAccessFeeRequestSchema = z
  .object({ nullifierHash: FieldElementSchema, authorizedNullifierHash: FieldElementSchema, withdrawnValue: NoteWithdrawalSchema })
  .strict();

/**
 * POST /api/facilitator/access-fee-proof: the agent's proof of an access-fee quote, relayed through
 * Entrypoint.relayAccessFee; `withdrawnValue` as the quote was asked for.
 */
export const AccessFeeProofRequestSchema = z
  .object({ authorizedNullifierHash: FieldElementSchema, withdrawnValue: NoteWithdrawalSchema, quote: QuoteSchema, proof: WithdrawProofSchema })
  .strict();

/**
 * settle-proof's answer for the fee's withdrawal (`amount` the fee, `fee` 0: no take), once the note of
 * `authorizedNullifierHash` is authorized.
 */
export const AccessFeeProofResponseSchema = SettleProofResponseSchema.extend({
  authorized: z.literal(true),
  authorizedNullifierHash: z.string().regex(/^[0-9]+$/),
}).strict();

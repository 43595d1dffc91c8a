import { z } from "zod";

/**
 * The one error body of the facilitator API. Settle-style routes add `settled: false` and authorize adds
 * `authorized: false` (docs/api.md 4.3, 4.5); the 402 of the access-fee
 * gate adds docs/api.md 2.6's `authorization` block.
 */
export const ErrorBodySchema = z
  .object({
    error: z.string(),
    code: z.string(),
    settled: z.literal(false).optional(),
    /**
     * A spend whose note is held by another request or whose transaction is unconfirmed (SETTLEMENT_IN_PROGRESS,
     * SETTLEMENT_UNCERTAIN): the note is not known to be unspent; retry the same request.
     */
    state: z.enum(["in-progress", "uncertain"]).optional(),
    /** The relay transaction of an uncertain settlement, when it is known. */
    fundingTxHash: z.string().nullable().optional(),
    /** On POST /api/facilitator/open-tab (docs/api.md 4.11). */
    opened: z.literal(false).optional(),
    /** On POST /api/facilitator/authorize (docs/api.md 4.5). */
    authorized: z.literal(false).optional(),
    authorization: z
      .object({
        network: z.string(),
        treasury: z.string(),
        requiredFeeAtomic: z.string(),
        /**
         * What paying the fee out of the note withdraws from it now (quote-access-fee's `withdrawnValue`): the fee and,
         * in paid mode, its relay's gas at the current gas price (the fee floor), all to the treasury.
         */
        noteWithdrawalAtomic: z.string(),
        instructions: z.string(),
      })
      .strict()
      .optional(),
  })
  .strict();

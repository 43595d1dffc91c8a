import { z } from "zod";
import { AtomicAmountSchema, FieldElementSchema } from "../../sdk/schema/primitives.js";

/** docs/api.md 2.4 `privacy` block, with the Groth16 proof metadata this facilitator adds under `proof`. */
export const PrivacyBlockSchema = z
  .object({
    private: z.boolean(),
    anonymitySet: z.number().int().nullable(),
    minimumForPrivacy: z.number().int(),
    disclosure: z.string(),
    /** Who proved the spend, and what the relayer learnt of the note in that mode (docs/design.md 10). */
    custody: z.object({ mode: z.enum(["custodial", "non-custodial"]), relayerLearned: z.string() }).strict(),
    proof: z
      .object({ system: z.literal("groth16"), curve: z.literal("bn128"), proofTimeMs: z.number().int(), publicSignals: z.number().int() })
      .strict()
      .optional(),
  })
  .strict();

/** GET /api/facilitator/anonymity-set's query: the value a payment withdraws (price and take, or the tab's deposit and take). */
export const AnonymitySetQuerySchema = z.object({ withdrawnValue: AtomicAmountSchema }).strict();

/**
 * Whether a payment withdrawing `withdrawnValue` is private: its own anonymity set, the independent depositors whose
 * screened deposits of at least that value are under the on-chain ASP root `aspRoot` (null with the set while the
 * indexer cannot be asked: never private then).
 */
export const AnonymitySetResponseSchema = z
  .object({
    withdrawnValue: AtomicAmountSchema,
    private: z.boolean(),
    anonymitySet: z.number().int().nullable(),
    minimumForPrivacy: z.number().int(),
    aspRoot: FieldElementSchema.nullable(),
  })
  .strict();

import { z } from "zod";

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

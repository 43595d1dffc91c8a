import { z } from "zod";

/** docs/api.md 2.4 `privacy` block, with the Groth16 proof metadata this facilitator adds under `proof`. */
export const PrivacyBlockSchema = z
  .object({
    private: z.boolean(),
    anonymitySet: z.number().int().nullable(),
    minimumForPrivacy: z.number().int(),
    disclosure: z.string(),
    proof: z
      .object({ system: z.literal("groth16"), curve: z.literal("bn128"), proofTimeMs: z.number().int(), publicSignals: z.number().int() })
      .strict()
      .optional(),
  })
  .strict();

import { z } from "zod";
import { DecimalStringSchema } from "../../sdk/schema/primitives.js";

const decimal = DecimalStringSchema.max(78);
const g1 = z.array(decimal).length(3);

/**
 * A withdrawal proof as snarkjs writes it: the Groth16 points and the public signals in the circuit's order (read
 * by name with namePublicSignals, whatever their number). Checked against the verification key before use.
 */
export const WithdrawProofSchema = z
  .object({
    proof: z
      .object({ pi_a: g1, pi_b: z.array(z.array(decimal).length(2)).length(3), pi_c: g1, protocol: z.literal("groth16"), curve: z.literal("bn128") })
      .strict(),
    publicSignals: z.array(decimal).min(1).max(32),
  })
  .strict();

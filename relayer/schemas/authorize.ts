import { z } from "zod";
import { Bytes32Schema, Caip2Schema, FieldElementSchema } from "../../sdk/schema/primitives.js";

/** POST /api/facilitator/authorize (docs/api.md 4.5). */
export const AuthorizeRequestSchema = z
  .object({ network: Caip2Schema, accessTokenTxHash: Bytes32Schema, nullifierHash: FieldElementSchema })
  .strict();

export const AuthorizeResponseSchema = z.object({ authorized: z.boolean(), error: z.string().optional() }).strict();

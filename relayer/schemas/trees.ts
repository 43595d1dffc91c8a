import { z } from "zod";
import { DecimalStringSchema } from "../../sdk/schema/primitives.js";

const count = z.number().int().min(0);

const TreeSchema = z.object({ root: DecimalStringSchema, depth: count, size: count, leaves: z.array(DecimalStringSchema) }).strict();

/**
 * GET /api/facilitator/trees (docs/api.md 4.10): the state tree (commitments in leaf order) and the on-chain ASP tree
 * (approved labels in tree order), from which an agent takes its own Merkle paths.
 */
export const TreesResponseSchema = z.object({ state: TreeSchema, asp: TreeSchema }).strict();

import { z } from "zod";
import { AddressSchema, AtomicAmountSchema, HexSchema } from "../../sdk/schema/primitives.js";

/** POST /api/agent/register (spec 4.8; the spec leaves the body open, docs/relayer.md documents it). */
export const AgentRegisterRequestSchema = z
  .object({
    name: z.string().min(1).max(100),
    /** The agent's public key (secp256k1, 0x-prefixed, compressed or uncompressed). */
    publicKey: HexSchema.refine((hex) => hex.length === 68 || hex.length === 132, { message: "must be a 33- or 65-byte public key" }),
    ownerWallet: AddressSchema,
    perTransactionLimitAtomic: AtomicAmountSchema,
    dailyLimitAtomic: AtomicAmountSchema,
    providerWhitelist: z.array(AddressSchema).max(100).default([]),
    categories: z.array(z.string().min(1).max(64)).max(32).default([]),
  })
  .strict();

export const AgentLookupQuerySchema = z.object({ id: z.string().regex(/^agent_[0-9a-f]{16}$/, "must be an agent id such as agent_0123456789abcdef").optional() }).strict();

const atomic = z.string().regex(/^[0-9]+$/);

export const AgentViewSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    publicKey: z.string(),
    ownerWallet: z.string(),
    limits: z.object({ perTransactionAtomic: atomic, dailyAtomic: atomic }).strict(),
    providerWhitelist: z.array(z.string()),
    categories: z.array(z.string()),
    spend: z.object({ totalAtomic: atomic, todayAtomic: atomic, transactionCount: z.number().int() }).strict(),
    createdAt: z.string(),
    prototype: z.literal(true),
  })
  .strict();

export const AgentListResponseSchema = z.object({ agents: z.array(AgentViewSchema), prototype: z.literal(true) }).strict();

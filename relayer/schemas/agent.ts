import { z } from "zod";
import { AddressSchema, AtomicAmountSchema, HexSchema } from "../../sdk/schema/primitives.js";

/** POST /api/agent/register (docs/api.md 4.8; the body is this project's own, documented in docs/relayer.md). */
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

const limits = z.object({ perTransactionAtomic: atomic, dailyAtomic: atomic }).strict();

/** What anyone sees of an agent: no owner wallet and no spend, which would link owners to withdrawals. */
export const AgentPublicViewSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    publicKey: z.string(),
    limits,
    providerWhitelist: z.array(z.string()),
    categories: z.array(z.string()),
    createdAt: z.string(),
    prototype: z.literal(true),
  })
  .strict();

/** What the holder of the agent's key sees (X-Agent-Key). */
export const AgentViewSchema = AgentPublicViewSchema.extend({
  ownerWallet: z.string(),
  spend: z.object({ totalAtomic: atomic, todayAtomic: atomic, transactionCount: z.number().int() }).strict(),
}).strict();

/** The 201 of a registration: the full record and the agent's key, shown this once. */
export const AgentRegisterResponseSchema = AgentViewSchema.extend({
  /** Send it as X-Agent-Key to look the agent up in full and to name it in a settle. */
  agentKey: z.string().regex(/^ak_[0-9a-f]{64}$/),
}).strict();

export const AgentListResponseSchema = z.object({ agents: z.array(AgentPublicViewSchema), prototype: z.literal(true) }).strict();

/** The header that carries an agent's key. */
export const AGENT_KEY_HEADER = "x-agent-key";

import { z } from "zod";
import { AddressSchema, AtomicAmountSchema, Caip2Schema } from "../../sdk/schema/primitives.js";

/** docs/api.md 2.1 `paymentDetails`. */
export const PaymentDetailsSchema = z
  .object({
    scheme: z.literal("exact").optional(),
    payTo: AddressSchema,
    maxAmountRequired: AtomicAmountSchema,
    networkId: Caip2Schema.optional(),
  })
  .strict();

/** Optional agent fields a settle may carry: the registry checks the payment against the agent's limits. */
export const AgentFieldsSchema = {
  agentId: z.string().regex(/^agent_[0-9a-f]{16}$/, "must be an agent id such as agent_0123456789abcdef").optional(),
  category: z.string().min(1).max(64).optional(),
};

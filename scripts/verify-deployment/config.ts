import { z } from "zod";
import { loadEnvConfig } from "../../lib/env-config.js";
import { AddressSchema } from "../../sdk/schema/primitives.js";
import { DEPLOY_DEFAULT_RPC_URL } from "../deploy/deploy-config.js";

/** The environment variable behind each setting of `npm run verify:deployment`. */
export const VERIFY_DEPLOYMENT_ENV = {
  rpcUrl: "RPC_URL",
  addressBook: "ADDRESS_BOOK",
  roleHolders: "ROLE_HOLDERS",
  pastRoleHolders: "PAST_ROLE_HOLDERS",
  maxBlockRange: "MAX_BLOCK_RANGE",
  phase1File: "PHASE1_PTAU",
} as const;

/** `ROLE=0xA,0xB;OTHER_ROLE=0xC`: accounts by role name (ROLE_HOLDERS: the holders now; PAST_ROLE_HOLDERS: earlier ones). */
const RoleHoldersSchema = z
  .string()
  .transform((text) => Object.fromEntries(text.split(";").filter(Boolean).map((entry) => entry.split("=", 2) as [string, string | undefined])))
  .pipe(z.record(z.string().regex(/^[A-Z0-9_]+$/, "must name a role such as POSTMAN_ROLE"), z.string().transform((holders) => holders.split(",").filter(Boolean)).pipe(z.array(AddressSchema))));

export const VerifyDeploymentConfigSchema = z
  .object({
    rpcUrl: z.url({ protocol: /^https?$/ }).default(DEPLOY_DEFAULT_RPC_URL),
    /** Default: deployments/<chainId>.json of the RPC's chain. */
    addressBook: z.string().min(1).optional(),
    roleHolders: RoleHoldersSchema.optional(),
    /** Accounts that held a role before and gave it up (a rotated-out key): the history check does not flag them. */
    pastRoleHolders: RoleHoldersSchema.optional(),
    /** Blocks per eth_getLogs request; lower it for a provider with a smaller cap. */
    maxBlockRange: z.coerce.number().int().positive().default(2_000),
    /** The public phase-1 file the key was made from: on a production chain the key passes only against it (key-trust.ts). */
    phase1File: z.string().min(1).optional(),
  })
  .strict();

export type VerifyDeploymentConfig = z.infer<typeof VerifyDeploymentConfigSchema>;

export function loadVerifyDeploymentConfig(env: NodeJS.ProcessEnv): VerifyDeploymentConfig {
  return loadEnvConfig(VERIFY_DEPLOYMENT_ENV, VerifyDeploymentConfigSchema, env);
}

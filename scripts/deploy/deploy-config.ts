import { z } from "zod";
import { loadEnvConfig } from "../../lib/env-config.js";
import { AddressSchema } from "../../sdk/schema/primitives.js";

/** The environment variable behind each deploy setting (README, "Running the services"). */
export const DEPLOY_ENV = {
  rpcUrl: "RPC_URL",
  deployerPrivateKey: "DEPLOYER_PRIVATE_KEY",
  deploymentsDir: "DEPLOYMENTS_DIR",
  deploymentId: "DEPLOYMENT_ID",
  postman: "POSTMAN_ADDRESS",
  accessFeeTreasury: "ACCESS_FEE_TREASURY",
  allowUntrustedKey: "ALLOW_UNTRUSTED_KEY",
  phase1File: "PHASE1_PTAU",
} as const;

export const DEPLOY_DEFAULT_RPC_URL = "http://127.0.0.1:8545";

export const DeployConfigSchema = z
  .object({
    /** The chain to deploy to: any JSON-RPC endpoint, any chain id. */
    rpcUrl: z.url({ protocol: /^https?$/ }).default(DEPLOY_DEFAULT_RPC_URL),
    /** Signs the deployment; default: the node's own first account (a local node's development account). */
    deployerPrivateKey: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte private key").optional(),
    /** Where deployments/<chainId>.json is written; default: deployments/ of the repository. */
    deploymentsDir: z.string().min(1).optional(),
    /** Ignition's deployment id, whose journal a rerun resumes; default: Ignition's per-chain id. */
    deploymentId: z.string().regex(/^[A-Za-z0-9_-]+$/, "must be letters, digits, _ or -").optional(),
    /** Each defaults to the deployer. */
    postman: AddressSchema.optional(),
    accessFeeTreasury: AddressSchema.optional(),
    /** Deploy to a production chain with a proving key the ceremony did not make (scripts/deploy/key-guard.ts). */
    allowUntrustedKey: z.stringbool().default(false),
    /**
     * The public phase-1 file the key was made from (powersOfTau28_hez_final_<power>.ptau): a production chain takes a
     * key only when its alpha and beta are this file's and the file's hash is the published one.
     */
    phase1File: z.string().min(1).optional(),
  })
  .strict();

export type DeployConfig = z.infer<typeof DeployConfigSchema>;

export function loadDeployConfig(env: NodeJS.ProcessEnv): DeployConfig {
  return loadEnvConfig(DEPLOY_ENV, DeployConfigSchema, env);
}

/** Whether the RPC is served from this machine: a node whose chain forgets everything when it restarts. */
export function isLoopbackRpc(rpcUrl: string): boolean {
  const host = new URL(rpcUrl).hostname;
  return host === "localhost" || host === "[::1]" || /^127\./.test(host);
}

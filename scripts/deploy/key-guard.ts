import { productionShortfalls, type ProvingKeyAssessment } from "../circuits/key-trust.js";
import { KNOWN_NETWORKS } from "../../relayer/pricing/pricing.js";

/** What the deploy does about the proving key: go ahead (printing `lines`), or stop with `lines` as the reason. */
export interface KeyVerdict {
  deploy: boolean;
  lines: string[];
}

/** Whether real funds run on `chainId`: the networks docs/api.md section 8 prices as mainnet (Base). */
export function isProductionChain(chainId: number): boolean {
  return KNOWN_NETWORKS[`eip155:${chainId}`]?.networkClass === "mainnet";
}

/**
 * Whether to deploy a pool whose inlined verifier holds the assessed key (scripts/circuits/key-trust.ts). On a
 * production chain a key whose files disagree, or without a public phase 1, three contributions, a beacon and a
 * transcript, could have been forged with by whoever made it: refused, unless `allowUntrustedKey` (a rehearsal),
 * which warns loudly. Elsewhere the deploy says what the key is, and warns where its files disagree.
 */
export function judgeProvingKey(assessment: ProvingKeyAssessment, chainId: number, options: { allowUntrustedKey: boolean }): KeyVerdict {
  const description = `proving key: ${assessment.description}`;
  const shortfalls = productionShortfalls(assessment);
  if (!isProductionChain(chainId)) {
    return { deploy: true, lines: [description, ...assessment.inconsistencies.map((problem) => `warning: ${problem}`)] };
  }
  if (shortfalls.length === 0) return { deploy: true, lines: [description] };
  if (!options.allowUntrustedKey) {
    return {
      deploy: false,
      lines: [
        `refusing to deploy to chain ${chainId}, a production chain: whoever made this proving key could forge withdrawals and empty the pool.`,
        description,
        ...shortfalls.map((shortfall) => `  - ${shortfall}`),
        "Run the ceremony (docs/trusted-setup.md) and commit its keys, or set ALLOW_UNTRUSTED_KEY=1 for a rehearsal that must never hold real funds.",
      ],
    };
  }
  const rule = "!".repeat(100);
  return {
    deploy: true,
    lines: [
      rule,
      `WARNING: ALLOW_UNTRUSTED_KEY=1 deploys to production chain ${chainId} with an UNTRUSTED proving key.`,
      description,
      ...shortfalls.map((shortfall) => `  - ${shortfall}`),
      "Whoever made this key can forge withdrawals and empty the pool. A rehearsal only: never put real funds in it.",
      rule,
    ],
  };
}

import type { Provider } from "ethers";

/** Circle's USDC by chain id (DESIGN.md section 4). */
export const CIRCLE_USDC: Readonly<Record<number, string>> = {
  8453: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", // Base
  84532: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", // Base Sepolia
};

/**
 * Circle's USDC on this chain: by chain id on Base and Base Sepolia, and on a local fork of either (which keeps
 * the local chain id) by finding code at one of their addresses. Undefined on a chain without it.
 */
export async function findCircleUsdc(provider: Provider, chainId: number): Promise<string | undefined> {
  const known = CIRCLE_USDC[chainId];
  if (known !== undefined) return known;
  for (const address of Object.values(CIRCLE_USDC)) {
    if ((await provider.getCode(address)) !== "0x") return address;
  }
  return undefined;
}

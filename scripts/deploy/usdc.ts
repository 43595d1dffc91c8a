import type { Provider } from "ethers";

/** Circle's USDC by chain id (docs/design.md, "Tokens and networks"). */
export const CIRCLE_USDC: Readonly<Record<number, string>> = {
  8453: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", // Base
  84532: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", // Base Sepolia
};

/**
 * Circle's USDC on this chain: the first of its known addresses, this chain id's first, that has code here. That
 * finds it on Base and Base Sepolia and on a local fork of either (which keeps the local chain id), and not on a
 * bare local node that merely carries Base Sepolia's chain id. Undefined on a chain without it.
 */
export async function findCircleUsdc(provider: Provider, chainId: number): Promise<string | undefined> {
  const own = CIRCLE_USDC[chainId];
  const candidates = [...(own === undefined ? [] : [own]), ...Object.values(CIRCLE_USDC).filter((address) => address !== own)];
  for (const address of candidates) {
    if ((await provider.getCode(address)) !== "0x") return address;
  }
  return undefined;
}

/** A production chain without Circle's USDC: the deploy never puts a token of its own in its place there. */
export class MissingUsdcError extends Error {
  constructor(chainId: number) {
    const address = CIRCLE_USDC[chainId];
    super(
      `chain ${chainId} is a production chain, and Circle's USDC${address === undefined ? " is not known for it" : ` (${address}) has no code on it`}: ` +
        "refusing to deploy a TestUSDC in its place. Check RPC_URL; to rehearse on a local node, fork Base (FORK_URL=<rpc> npm run chain:fork).",
    );
    this.name = "MissingUsdcError";
  }
}

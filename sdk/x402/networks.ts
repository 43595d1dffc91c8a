/**
 * x402 v1 names EVM networks by slug, v2 by CAIP-2 id (`eip155:<chainId>`). The slugs known here are the
 * reference packages' own for Base (`EVM_NETWORK_CHAIN_ID_MAP` of `@x402/evm/v1`), plus "hardhat" for the local
 * chain, which the reference table lacks (reference-facilitator.ts registers it there).
 */
export const V1_NETWORK_CHAIN_IDS: Readonly<Record<string, number>> = {
  base: 8453,
  "base-sepolia": 84532,
  hardhat: 31337,
};

const CAIP2_EVM = /^eip155:([1-9][0-9]*)$/;

/** The EVM chain id an x402 network name (v2 CAIP-2 or v1 slug) stands for; undefined when unknown. */
export function chainIdOfNetwork(network: string): number | undefined {
  const caip2 = CAIP2_EVM.exec(network);
  if (caip2?.[1] !== undefined) {
    const chainId = Number(caip2[1]);
    return Number.isSafeInteger(chainId) ? chainId : undefined;
  }
  return Object.hasOwn(V1_NETWORK_CHAIN_IDS, network) ? V1_NETWORK_CHAIN_IDS[network] : undefined;
}

/** The x402 v1 slug of a chain; undefined when v1 has no name for it. */
export function v1NetworkOf(chainId: number): string | undefined {
  return Object.entries(V1_NETWORK_CHAIN_IDS).find(([, id]) => id === chainId)?.[0];
}

/** The x402 v2 (CAIP-2) name of a chain. */
export function caip2NetworkOf(chainId: number): `eip155:${number}` {
  return `eip155:${chainId}`;
}

const WEI_PER_ETH = 10n ** 18n;

/** What `gas` at `gasPriceWei` costs in atomic USDC at `usdcPerEth` (atomic USDC per ETH), rounded up. */
export function gasCostInUsdc(gas: bigint, gasPriceWei: bigint, usdcPerEth: bigint): bigint {
  return (gas * gasPriceWei * usdcPerEth + WEI_PER_ETH - 1n) / WEI_PER_ETH;
}

/** The highest gas price at which `gas` costs at most `usdc` atomic USDC at `usdcPerEth`: gasCostInUsdc's inverse. */
export function gasPriceCoveredBy(usdc: bigint, gas: bigint, usdcPerEth: bigint): bigint {
  return (usdc * WEI_PER_ETH) / (gas * usdcPerEth);
}

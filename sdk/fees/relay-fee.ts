/** The pool relay's fee math, shared by the relayer (what it charges) and the agent SDK (which note can pay). */

export const BPS_DENOMINATOR = 10_000n;

/** fee = amount * bps / 10000, rounded down exactly as Entrypoint.relay does. */
export function feeOf(amount: bigint, bps: bigint): bigint {
  return (amount * bps) / BPS_DENOMINATOR;
}

/**
 * The smallest gross withdrawal whose net (gross - fee(gross)) covers `net` (docs/design.md 5: the settle-x402
 * payer must hold exactly the seller's amount after the take).
 */
export function grossForNet(net: bigint, bps: bigint): bigint {
  if (bps === 0n) return net;
  // ceil(net * D / (D - bps)) always covers net; rounding the fee down can let a slightly smaller gross do too.
  let gross = (net * BPS_DENOMINATOR + (BPS_DENOMINATOR - bps) - 1n) / (BPS_DENOMINATOR - bps);
  while (gross - 1n - feeOf(gross - 1n, bps) >= net) gross--;
  return gross;
}

import type { PoolChain } from "./pool-chain.js";

export interface FeeClaim {
  /** What the pool owed the treasury before this round (PrivacyPool.accruedFeesOf). */
  accrued: bigint;
  /** What the claim paid the treasury; absent when below the minimum, nothing was sent. */
  claimed?: bigint;
  txHash?: string;
}

/**
 * Pays the treasury the takes its relays accrued in the pool (PrivacyPool.claimFees) once they reach `minimum`
 * atomic units: a relay accrues its fee with one storage write instead of a token transfer, and the claim moves
 * them in one transfer, sent by the relaying key in nonce order with relays. The pool keeps one unit (its slot
 * stays non-zero), so a claim pays what is accrued less one.
 */
export async function claimTreasuryFees(chain: PoolChain, treasury: string, minimum: bigint): Promise<FeeClaim> {
  const accrued = await chain.call(() => chain.pool.accruedFeesOf(treasury));
  if (accrued <= 1n || accrued - 1n < minimum) return { accrued };
  const data = chain.pool.interface.encodeFunctionData("claimFees", [treasury]);
  const sent = await chain.sendFromRelayer({ to: chain.deployment.privacyPool, data });
  const receipt = await chain.call(() => sent.wait());
  if (receipt === null || receipt.status !== 1) throw new Error(`fee claim transaction ${sent.hash} reverted`);
  return { accrued, claimed: accrued - 1n, txHash: receipt.hash };
}

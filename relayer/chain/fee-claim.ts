import type { PoolChain } from "./pool-chain.js";

export interface FeeClaim {
  /** What the pool owes the treasury after this round (PrivacyPool.accruedFeesOf): 1 after a claim. */
  owed: bigint;
  /** The claim sent, when the accrued takes reached the minimum. */
  claim?: { amount: bigint; txHash: string };
}

/**
 * Pays the treasury the takes its relays accrued in the pool (PrivacyPool.claimFees) once they reach `minimum`
 * atomic units: a relay accrues its fee with one storage write instead of a token transfer, and the claim moves
 * them in one transfer, sent by the relaying key in nonce order with relays. The pool keeps one unit (its slot
 * stays non-zero), so a claim pays what is accrued less one.
 */
export async function claimTreasuryFees(chain: PoolChain, treasury: string, minimum: bigint): Promise<FeeClaim> {
  const accrued = await chain.call(() => chain.pool.accruedFeesOf(treasury));
  if (accrued <= 1n || accrued - 1n < minimum) return { owed: accrued };
  const data = chain.pool.interface.encodeFunctionData("claimFees", [treasury]);
  const sent = await chain.sendFromRelayer({ to: chain.deployment.privacyPool, data });
  const receipt = await chain.call(() => sent.wait());
  if (receipt === null || receipt.status !== 1) throw new Error(`fee claim transaction ${sent.hash} reverted`);
  return { owed: 1n, claim: { amount: accrued - 1n, txHash: receipt.hash } };
}

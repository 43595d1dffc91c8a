import type { PrivacyPool, TestUSDC } from "../../types/ethers-contracts/index.js";
import { decodeXPayment, poolAuthorizationDigest, poolTransferOf } from "../../sdk/x402/index.js";

const ERC1271_MAGIC = "0x1626ba7e";

/**
 * Whether the pool's ERC-1271 answers for exactly the payment `xPayment` carries (a settle-x402 answer's): what the
 * seller's facilitator checks before it pulls the price from the pool.
 */
export async function poolAnswersFor({ privacyPool, usdc }: { privacyPool: PrivacyPool; usdc: TestUSDC }, xPayment: string): Promise<boolean> {
  const { payload } = decodeXPayment(xPayment);
  const pool = await privacyPool.getAddress();
  const transfer = poolTransferOf(pool, payload);
  if (transfer === undefined) return false;
  const digest = poolAuthorizationDigest(await usdc.DOMAIN_SEPARATOR(), pool, transfer);
  return (await privacyPool.isValidSignature(digest, payload.signature)) === ERC1271_MAGIC;
}

import { AbiCoder, keccak256, Wallet } from "ethers";

const DERIVATION_TAG = "x402-privacy-facilitator/payer/v1";

/**
 * The single-use payer of a settlement, derived from the operator's secret and the spent note's nullifier hash
 * (DESIGN.md 6): never stored, always recoverable by the operator, e.g. to sweep funds an expired authorization
 * left behind. A different secret per deployment keeps payers unlinkable across operators.
 */
export function payerWallet(payerKeySecret: string, nullifierHash: bigint): Wallet {
  const key = keccak256(AbiCoder.defaultAbiCoder().encode(["string", "bytes32", "uint256"], [DERIVATION_TAG, payerKeySecret, nullifierHash]));
  return new Wallet(key);
}

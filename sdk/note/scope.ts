import { solidityPackedKeccak256 } from "ethers";
import { SNARK_SCALAR_FIELD } from "../crypto/field.js";

/** Scope of a pool: keccak256(abi.encodePacked(pool, chainId, asset)) % FIELD, as PrivacyPool.SCOPE. */
export function scopeOf(pool: string, chainId: bigint, asset: string): bigint {
  return BigInt(solidityPackedKeccak256(["address", "uint256", "address"], [pool, chainId, asset])) % SNARK_SCALAR_FIELD;
}

/** Label of the pool's `nonce`-th deposit: keccak256(abi.encodePacked(scope, nonce)) % FIELD. */
export function labelOf(scope: bigint, nonce: bigint): bigint {
  return BigInt(solidityPackedKeccak256(["uint256", "uint256"], [scope, nonce])) % SNARK_SCALAR_FIELD;
}

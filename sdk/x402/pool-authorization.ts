import { AbiCoder, concat, keccak256, toBeHex, TypedDataEncoder } from "ethers";
import type { PoolAuthorization } from "../circuit/context.js";
import { eip3009Types } from "./eip712-domain.js";
import type { ValidityWindow } from "./payload.js";
import { amountOf } from "./payload.js";
import type { ExactEvmPayload, ExactRequirement } from "./schemas.js";

const abi = AbiCoder.defaultAbiCoder();

/** The transfer a PoolAuthorization authorizes: what the token's digest covers (its `from` is the pool). */
export type PoolTransfer = Pick<PoolAuthorization, "payTo" | "value" | "validAfter" | "validBefore" | "nonce">;

/**
 * The transfer the pool authorizes to pay `accepted` out of the note of `nullifierHash` within `window`: exactly the
 * seller's amount to its payTo, under the note's nullifier hash as the nonce (the pool spends each note once, so no
 * two of its authorizations share one).
 */
export function poolTransferFor(accepted: ExactRequirement, window: ValidityWindow, nullifierHash: bigint): PoolTransfer {
  return { payTo: accepted.payTo, value: BigInt(amountOf(accepted)), ...window, nonce: toBeHex(nullifierHash, 32) };
}

/** The token's EIP-712 digest of `authorization` as a TransferWithAuthorization from `pool` (what the pool answers for). */
export function poolAuthorizationDigest(domainSeparator: string, pool: string, authorization: PoolTransfer): string {
  const structHash = TypedDataEncoder.from(eip3009Types("TransferWithAuthorization")).hash(eip3009MessageOf(pool, authorization));
  return keccak256(concat(["0x1901", domainSeparator, structHash]));
}

/**
 * The signature the pool's authorization carries to the token: abi.encode(nullifierHash, refundAnchor), 64 bytes, from
 * which the pool's isValidSignature finds its record. It is unique per payment (x402's facilitator keys pending
 * settlements by it), not 65 bytes (so the token's bytes overload checks ERC-1271) and carries no ERC-6492 suffix.
 */
export function poolAuthorizationSignature(nullifierHash: bigint, refundAnchor: bigint): string {
  return abi.encode(["uint256", "uint256"], [nullifierHash, refundAnchor]);
}

/** contracts/lib/SpendRecord.sol `authorized`: what the pool keeps in the spent note's slot for its authorization. */
export function poolAuthorizationRecord(digest: string, refundAnchor: bigint): string {
  return keccak256(abi.encode(["bytes32", "uint256"], [digest, refundAnchor]));
}

/** The x402 `exact` payload of the pool's authorization: `from` the pool, signed with poolAuthorizationSignature. */
export function poolAuthorizationPayload(pool: string, authorization: PoolTransfer, refundAnchor: bigint): ExactEvmPayload {
  const message = eip3009MessageOf(pool, authorization);
  return {
    signature: poolAuthorizationSignature(BigInt(authorization.nonce), refundAnchor),
    authorization: {
      ...message,
      value: message.value.toString(),
      validAfter: message.validAfter.toString(),
      validBefore: message.validBefore.toString(),
    },
  };
}

/**
 * The pool's transfer an `exact` payload carries, when its `from` is `pool` and its signature the 64 bytes the pool
 * answers for; undefined for any other payer's payload.
 */
export function poolTransferOf(pool: string, { authorization, signature }: ExactEvmPayload): PoolTransfer | undefined {
  if (authorization.from.toLowerCase() !== pool.toLowerCase() || (signature.length - 2) / 2 !== 64) return undefined;
  const { to, value, validAfter, validBefore, nonce } = authorization;
  return { payTo: to, value: BigInt(value), validAfter: BigInt(validAfter), validBefore: BigInt(validBefore), nonce };
}

function eip3009MessageOf(pool: string, { payTo, value, validAfter, validBefore, nonce }: PoolTransfer) {
  return { from: pool, to: payTo, value, validAfter, validBefore, nonce };
}

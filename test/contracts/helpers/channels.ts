import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN, claimBatchTypes, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, refundTypes, voucherTypes } from "@x402/evm";
import { AbiCoder, hexlify, keccak256, randomBytes, type Signer, type TypedDataDomain, type TypedDataField } from "ethers";
import type { TestUSDC } from "../../../types/ethers-contracts/index.js";
import type { IX402BatchSettlement } from "../../../types/ethers-contracts/contracts/interfaces/IX402BatchSettlement.js";
import { signAuthorization } from "./authorizations.js";

export type ChannelConfig = IX402BatchSettlement.ChannelConfigStruct & { withdrawDelay: number; salt: string };

const coder = AbiCoder.defaultAbiCoder();

/** @x402/evm's type definitions, as ethers takes them (its are readonly). */
const typesOf = (types: Record<string, readonly TypedDataField[]>) => types as Record<string, TypedDataField[]>;

/** The batch-settlement EIP-712 domain of @x402/evm on this chain. */
export const channelDomain = (chainId: bigint): TypedDataDomain => ({ ...BATCH_SETTLEMENT_DOMAIN, chainId, verifyingContract: BATCH_SETTLEMENT_ADDRESS });

export const signVoucher = (signer: Signer, chainId: bigint, channelId: string, maxClaimableAmount: bigint) =>
  signer.signTypedData(channelDomain(chainId), typesOf(voucherTypes), { channelId, maxClaimableAmount });

export const signRefund = (signer: Signer, chainId: bigint, channelId: string, nonce: bigint, amount: bigint) =>
  signer.signTypedData(channelDomain(chainId), typesOf(refundTypes), { channelId, nonce, amount });

export interface ClaimRow {
  voucher: { channel: ChannelConfig; maxClaimableAmount: bigint };
  signature: string;
  totalClaimed: bigint;
}

export const signClaimBatch = (signer: Signer, chainId: bigint, rows: { channelId: string; maxClaimableAmount: bigint; totalClaimed: bigint }[]) =>
  signer.signTypedData(channelDomain(chainId), typesOf(claimBatchTypes), { claims: rows });

/** The EIP-3009 nonce of a deposit into `channelId`: it funds that channel only. */
export const depositNonceOf = (channelId: string, salt: bigint) => keccak256(coder.encode(["bytes32", "uint256"], [channelId, salt]));

/**
 * The payer's EIP-3009 authorization of a deposit into `channelId`, as @x402/evm's client signs it, and the collector
 * data the facilitator sends with it.
 */
export async function depositCollectorData(
  payer: Signer,
  usdc: TestUSDC,
  channelId: string,
  amount: bigint,
  validBefore: bigint,
  salt = BigInt(hexlify(randomBytes(32))),
) {
  const signature = await signAuthorization(payer, usdc, "ReceiveWithAuthorization", {
    from: await payer.getAddress(),
    to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
    value: amount,
    validAfter: 0n,
    validBefore,
    nonce: depositNonceOf(channelId, salt),
  });
  return coder.encode(["uint256", "uint256", "uint256", "bytes"], [0n, validBefore, salt, signature]);
}

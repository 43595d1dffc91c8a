import { AbiCoder, keccak256 } from "ethers";
import { SNARK_SCALAR_FIELD } from "../crypto/field.js";

/** The relay instructions a proof commits to (Entrypoint's RelayData). */
export interface RelayData {
  recipient: string;
  feeRecipient: string;
  /** Share of the withdrawn amount paid to feeRecipient, in basis points. */
  relayFeeBPS: bigint;
  /** When the recipient is a single-use payer: the payment its one EIP-3009 authorization makes (a refund checks it). */
  payment?: PaymentTerms;
}

/** The EIP-3009 authorization a single-use payer signs: its nonce and the end of its window. */
export interface PaymentTerms {
  nonce: string;
  validBefore: bigint;
}

/**
 * What an access fee paid by a withdrawal proof pays and for which note (Entrypoint's AccessFeeData, for
 * relayAccessFee): the whole withdrawn value to the treasury, authorizing the note of `nullifierHash`.
 */
export interface AccessFeeData {
  treasury: string;
  nullifierHash: bigint;
}

/**
 * A seller's x402 price paid straight from the pool (Entrypoint's SellerPayment, for relay): exactly `amount` to
 * `payTo` and `fee` to `feeRecipient`, for the request `requestReference` names, before `validBefore`.
 */
export interface SellerPayment {
  payTo: string;
  amount: bigint;
  feeRecipient: string;
  fee: bigint;
  /** 32 bytes, 0x-prefixed: the seller's reference of the request paid. */
  requestReference: string;
  /** Unix seconds: the relay is refused from then on. */
  validBefore: bigint;
}

/**
 * An x402 `exact` seller paid by the pool itself (Entrypoint's PoolAuthorization, for relay): the relay authorizes the
 * one EIP-3009 TransferWithAuthorization from the pool of `value` to `payTo` within the window, under `nonce` (the spent
 * note's nullifier hash), which the pool's ERC-1271 isValidSignature then answers for; `relayFeeBPS` of the withdrawn
 * value goes to `feeRecipient`, and `value` is exactly the rest.
 */
export interface PoolAuthorization {
  payTo: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  /** 32 bytes, 0x-prefixed: the spent note's nullifier hash. */
  nonce: string;
  feeRecipient: string;
  relayFeeBPS: bigint;
}

/** Entrypoint's Withdrawal struct: who processes the withdrawal and the ABI-encoded RelayData. */
export interface Withdrawal {
  processooor: string;
  data: string;
}

const abi = AbiCoder.defaultAbiCoder();

const NO_PAYMENT: PaymentTerms = { nonce: `0x${"00".repeat(32)}`, validBefore: 0n };

export function encodeRelayData({ recipient, feeRecipient, relayFeeBPS, payment = NO_PAYMENT }: RelayData): string {
  return abi.encode(["tuple(address,address,uint256,bytes32,uint256)"], [[recipient, feeRecipient, relayFeeBPS, payment.nonce, payment.validBefore]]);
}

/** The RelayData of a withdrawal's `data`; `payment` absent when it names none. */
export function decodeRelayData(data: string): RelayData {
  const [[recipient, feeRecipient, relayFeeBPS, nonce, validBefore]] = abi.decode(["tuple(address,address,uint256,bytes32,uint256)"], data);
  const payment = BigInt(nonce) === 0n ? {} : { payment: { nonce: String(nonce), validBefore: BigInt(validBefore) } };
  return { recipient: String(recipient), feeRecipient: String(feeRecipient), relayFeeBPS: BigInt(relayFeeBPS), ...payment };
}

/** abi.encode(AccessFeeData): 64 bytes, where a RelayData takes 160, so neither is ever read as the other. */
export function encodeAccessFeeData({ treasury, nullifierHash }: AccessFeeData): string {
  return abi.encode(["tuple(address,uint256)"], [[treasury, nullifierHash]]);
}

export function decodeAccessFeeData(data: string): AccessFeeData {
  const [[treasury, nullifierHash]] = abi.decode(["tuple(address,uint256)"], data);
  return { treasury: String(treasury), nullifierHash: BigInt(nullifierHash) };
}

const SELLER_PAYMENT_TUPLE = "tuple(address,uint256,address,uint256,bytes32,uint256)";

/** abi.encode(SellerPayment): 192 bytes, where a RelayData takes 160 and an AccessFeeData 64. */
export function encodeSellerPayment({ payTo, amount, feeRecipient, fee, requestReference, validBefore }: SellerPayment): string {
  return abi.encode([SELLER_PAYMENT_TUPLE], [[payTo, amount, feeRecipient, fee, requestReference, validBefore]]);
}

export function decodeSellerPayment(data: string): SellerPayment {
  const [[payTo, amount, feeRecipient, fee, requestReference, validBefore]] = abi.decode([SELLER_PAYMENT_TUPLE], data);
  return {
    payTo: String(payTo),
    amount: BigInt(amount),
    feeRecipient: String(feeRecipient),
    fee: BigInt(fee),
    requestReference: String(requestReference),
    validBefore: BigInt(validBefore),
  };
}

const POOL_AUTHORIZATION_TUPLE = "tuple(address,uint256,uint256,uint256,bytes32,address,uint256)";

/** abi.encode(PoolAuthorization): 224 bytes, where a RelayData takes 160 and a SellerPayment 192. */
export function encodePoolAuthorization({ payTo, value, validAfter, validBefore, nonce, feeRecipient, relayFeeBPS }: PoolAuthorization): string {
  return abi.encode([POOL_AUTHORIZATION_TUPLE], [[payTo, value, validAfter, validBefore, nonce, feeRecipient, relayFeeBPS]]);
}

export function decodePoolAuthorization(data: string): PoolAuthorization {
  const [[payTo, value, validAfter, validBefore, nonce, feeRecipient, relayFeeBPS]] = abi.decode([POOL_AUTHORIZATION_TUPLE], data);
  return {
    payTo: String(payTo),
    value: BigInt(value),
    validAfter: BigInt(validAfter),
    validBefore: BigInt(validBefore),
    nonce: String(nonce),
    feeRecipient: String(feeRecipient),
    relayFeeBPS: BigInt(relayFeeBPS),
  };
}

/**
 * context = keccak256(abi.encode(withdrawal, scope)) % FIELD. A proof is bound to it, so the recipient, the fee or
 * the payment cannot be changed after proving.
 */
export function withdrawalContext({ processooor, data }: Withdrawal, scope: bigint): bigint {
  const encoded = abi.encode(["tuple(address,bytes)", "uint256"], [[processooor, data], scope]);
  return BigInt(keccak256(encoded)) % SNARK_SCALAR_FIELD;
}

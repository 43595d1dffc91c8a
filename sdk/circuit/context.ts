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

/**
 * context = keccak256(abi.encode(withdrawal, scope)) % FIELD. A proof is bound to it, so the recipient, the fee or
 * the payment cannot be changed after proving.
 */
export function withdrawalContext({ processooor, data }: Withdrawal, scope: bigint): bigint {
  const encoded = abi.encode(["tuple(address,bytes)", "uint256"], [[processooor, data], scope]);
  return BigInt(keccak256(encoded)) % SNARK_SCALAR_FIELD;
}

import { AbiCoder, keccak256 } from "ethers";
import { SNARK_SCALAR_FIELD } from "../crypto/field.js";

/** The relay instructions a proof commits to (Entrypoint's RelayData). */
export interface RelayData {
  recipient: string;
  feeRecipient: string;
  /** Share of the withdrawn amount paid to feeRecipient, in basis points. */
  relayFeeBPS: bigint;
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

/** x402 batch-settlement's ChannelConfig, as the entrypoint's TabOpening and TabRecord carry it. */
export interface TabChannelConfig {
  payer: string;
  payerAuthorizer: string;
  receiver: string;
  receiverAuthorizer: string;
  token: string;
  withdrawDelay: number;
  /** 32 bytes, 0x-prefixed. */
  salt: string;
}

/**
 * A private tab opened by the pool (Entrypoint's TabOpening, for relay): the relay deposits the withdrawn value less
 * `relayFeeBPS` of it into `channel`, whose payer is the note's TabPayer (Entrypoint.tabPayerOf its nullifier hash);
 * from `reclaimableAfter` anyone may take back what the seller did not claim (withdrawTab, returnTab).
 */
export interface TabOpening {
  channel: TabChannelConfig;
  reclaimableAfter: bigint;
  feeRecipient: string;
  relayFeeBPS: bigint;
}

/** What the pool records of a tab's relay (Entrypoint's TabRecord), which withdrawTab and returnTab present. */
export interface TabRecord {
  channel: TabChannelConfig;
  deposit: bigint;
  reclaimableAfter: bigint;
  refundAnchor: bigint;
}

/** Entrypoint's Withdrawal struct: who processes the withdrawal and the ABI-encoded RelayData. */
export interface Withdrawal {
  processooor: string;
  data: string;
}

const abi = AbiCoder.defaultAbiCoder();

const RELAY_DATA_TUPLE = "tuple(address,address,uint256)";

/** abi.encode(RelayData): 96 bytes, the length of no other kind of relay data. */
export function encodeRelayData({ recipient, feeRecipient, relayFeeBPS }: RelayData): string {
  return abi.encode([RELAY_DATA_TUPLE], [[recipient, feeRecipient, relayFeeBPS]]);
}

/** The RelayData of a withdrawal's `data`. */
export function decodeRelayData(data: string): RelayData {
  const [[recipient, feeRecipient, relayFeeBPS]] = abi.decode([RELAY_DATA_TUPLE], data);
  return { recipient: String(recipient), feeRecipient: String(feeRecipient), relayFeeBPS: BigInt(relayFeeBPS) };
}

/** abi.encode(AccessFeeData): 64 bytes, where a RelayData takes 96, so neither is ever read as the other. */
export function encodeAccessFeeData({ treasury, nullifierHash }: AccessFeeData): string {
  return abi.encode(["tuple(address,uint256)"], [[treasury, nullifierHash]]);
}

export function decodeAccessFeeData(data: string): AccessFeeData {
  const [[treasury, nullifierHash]] = abi.decode(["tuple(address,uint256)"], data);
  return { treasury: String(treasury), nullifierHash: BigInt(nullifierHash) };
}

const SELLER_PAYMENT_TUPLE = "tuple(address,uint256,address,uint256,bytes32,uint256)";

/** abi.encode(SellerPayment): 192 bytes, where a RelayData takes 96 and an AccessFeeData 64. */
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

/** abi.encode(PoolAuthorization): 224 bytes, where a RelayData takes 96 and a SellerPayment 192. */
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

const CHANNEL_CONFIG_TUPLE = "tuple(address,address,address,address,address,uint40,bytes32)";
const TAB_OPENING_TUPLE = `tuple(${CHANNEL_CONFIG_TUPLE},uint256,address,uint256)`;

const channelTupleOf = ({ payer, payerAuthorizer, receiver, receiverAuthorizer, token, withdrawDelay, salt }: TabChannelConfig) =>
  [payer, payerAuthorizer, receiver, receiverAuthorizer, token, withdrawDelay, salt];

/** abi.encode(TabOpening): 320 bytes, the length of no other kind of relay data. */
export function encodeTabOpening({ channel, reclaimableAfter, feeRecipient, relayFeeBPS }: TabOpening): string {
  return abi.encode([TAB_OPENING_TUPLE], [[channelTupleOf(channel), reclaimableAfter, feeRecipient, relayFeeBPS]]);
}

import { AbiCoder, keccak256, zeroPadValue } from "ethers";
import { decodeXPayment, poolAuthorizationDigest, poolAuthorizationRecord, poolTransferOf, type PoolTransfer } from "../../sdk/x402/index.js";
import type { LeaseRecord } from "../store/relayer-store.js";
import { tabLeasePaymentOf } from "../x402/tab-lease.js";

/** contracts/lib/SpendRecord.sol: what the pool keeps in a spent nullifier hash's slot for a spend that paid no payer. */
export const PLAIN_RECORD = zeroPadValue("0x01", 32);
/** contracts/lib/SpendRecord.sol: the slot of an origin whose payment came back (Entrypoint.depositRefund). */
export const REFUNDED_RECORD = zeroPadValue("0x02", 32);

/** IEntrypoint.PaymentRecord: what a relay that funded a single-use payer paid, as the pool records it (hashed). */
export interface PaymentRecord {
  payer: string;
  amount: bigint;
  nonce: string;
  validBefore: bigint;
  refundAnchor: bigint;
}

/**
 * The PaymentRecord the relay of a settle-x402 `lease` makes the pool record, from what the lease stored before the
 * relay left: the payer (its recipient), the payout (gross less fee), the authorization's nonce and validBefore, and
 * the proof's refund anchor. Undefined for a lease that funds no payer, or one of an earlier version that did not
 * store its refund anchor.
 */
export function paymentRecordOf(lease: LeaseRecord): PaymentRecord | undefined {
  const { payment } = lease;
  if (payment === null || payment.refundAnchor === null) return undefined;
  return {
    payer: lease.recipient,
    amount: lease.gross - lease.fee,
    nonce: payment.nonce,
    validBefore: BigInt(payment.validBefore),
    refundAnchor: payment.refundAnchor,
  };
}

/** keccak256(abi.encode(PaymentRecord)): what the pool keeps in the origin's nullifier slot. */
export function paymentRecordHash({ payer, amount, nonce, validBefore, refundAnchor }: PaymentRecord): string {
  return keccak256(
    AbiCoder.defaultAbiCoder().encode(["tuple(address,uint256,bytes32,uint256,uint256)"], [[payer, amount, nonce, validBefore, refundAnchor]]),
  );
}

/** The pool and its token's EIP-712 domain separator: what the record of a pool authorization is computed under. */
export interface PoolDomain {
  pool: string;
  separator: string;
}

/**
 * The transfer a settle-x402 lease's payment has the pool authorize (its x402 payload is from the pool, signed with
 * the 64 bytes the pool answers for); undefined for a lease whose payment a single-use payer signs (a tab's).
 */
export function poolTransferOfLease(lease: LeaseRecord, pool: string): PoolTransfer | undefined {
  if (lease.payment === null || tabLeasePaymentOf(lease.payment.xPayment) !== undefined) return undefined;
  return poolTransferOf(pool, decodeXPayment(lease.payment.xPayment).payload);
}

/**
 * What the pool keeps in the slot of a lease's note once its relay made the pool authorize the lease's transfer
 * (SpendRecord.authorized); undefined for a lease that makes no pool authorization, or one without its refund anchor.
 */
export function poolAuthorizationRecordOf(lease: LeaseRecord, { pool, separator }: PoolDomain): string | undefined {
  const transfer = poolTransferOfLease(lease, pool);
  if (transfer === undefined || lease.payment?.refundAnchor == null) return undefined;
  return poolAuthorizationRecord(poolAuthorizationDigest(separator, pool, transfer), lease.payment.refundAnchor);
}

/**
 * Whether `recorded`, the pool's record of the lease's note (PrivacyPool.spendRecordOf), is what the lease's relay
 * writes: PLAIN for a spend that funds no payer; for a pool authorization, its record (`domain`, given for such a
 * lease, says under what); for a payer's payment, the hash of its PaymentRecord; REFUNDED once the payment came back
 * (only the record's own payment is ever refunded). A lease of an earlier version, which did not store its refund
 * anchor, is matched by any payment's record.
 */
export function recordsLease(recorded: string, lease: LeaseRecord, domain?: PoolDomain): boolean {
  if (lease.payment === null) return recorded === PLAIN_RECORD;
  if (recorded === REFUNDED_RECORD) return true;
  const authorized = domain === undefined ? undefined : poolAuthorizationRecordOf(lease, domain);
  if (authorized !== undefined) return recorded === authorized;
  const record = paymentRecordOf(lease);
  return record === undefined ? BigInt(recorded) > 2n : recorded === paymentRecordHash(record);
}

import { AbiCoder, keccak256, zeroPadValue } from "ethers";
import type { LeaseRecord } from "../store/relayer-store.js";

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

/**
 * Whether `recorded`, the pool's record of the lease's note (PrivacyPool.spendRecordOf), is what the lease's relay
 * writes: PLAIN for a spend that funds no payer; for one that does, the hash of its PaymentRecord, or REFUNDED once
 * the sweep returned that payment (only the record's own payment is ever refunded). A lease of an earlier version,
 * which did not store its refund anchor, is matched by any payment's record.
 */
export function recordsLease(recorded: string, lease: LeaseRecord): boolean {
  if (lease.payment === null) return recorded === PLAIN_RECORD;
  if (recorded === REFUNDED_RECORD) return true;
  const record = paymentRecordOf(lease);
  return record === undefined ? BigInt(recorded) > 2n : recorded === paymentRecordHash(record);
}

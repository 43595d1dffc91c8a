import { AbiCoder, keccak256, zeroPadValue } from "ethers";
import type { TabRecord } from "../../sdk/index.js";
import { decodeXPayment, poolAuthorizationDigest, poolAuthorizationRecord, poolTransferOf, type PoolTransfer } from "../../sdk/x402/index.js";
import type { LeaseRecord } from "../store/relayer-store.js";
import { tabLeasePaymentOf } from "../x402/tab-lease.js";

/** contracts/lib/SpendRecord.sol: what the pool keeps in a spent nullifier hash's slot for a spend that paid no payer. */
export const PLAIN_RECORD = zeroPadValue("0x01", 32);
/** contracts/lib/SpendRecord.sol: the slot of an origin whose payment came back (a refund note was made of it). */
export const REFUNDED_RECORD = zeroPadValue("0x02", 32);

/** The pool and its token's EIP-712 domain separator: what the record of a pool authorization is computed under. */
export interface PoolDomain {
  pool: string;
  separator: string;
}

/**
 * The transfer a settle-x402 lease's payment has the pool authorize (its x402 payload is from the pool, signed with
 * the 64 bytes the pool answers for); undefined for an open-tab lease.
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
 * The TabRecord the relay of an open-tab `lease` makes the pool keep, from what the lease stored before the relay
 * left: the channel, the deposit (gross less fee), the tab's lifetime and the proof's refund anchor. Undefined for any
 * other lease.
 */
export function tabRecordOf(lease: LeaseRecord): TabRecord | undefined {
  const tab = lease.payment === null ? undefined : tabLeasePaymentOf(lease.payment.xPayment);
  if (tab === undefined || lease.payment!.refundAnchor === null) return undefined;
  return {
    channel: tab.channelConfig,
    deposit: lease.gross - lease.fee,
    reclaimableAfter: BigInt(tab.reclaimableAfter),
    refundAnchor: lease.payment!.refundAnchor,
  };
}

const TAB_RECORD_TUPLE = "tuple(tuple(address,address,address,address,address,uint40,bytes32),uint256,uint256,uint256)";

/** keccak256(abi.encode(TabRecord)): what the pool keeps in the origin's slot once a relay opened the tab. */
export function tabRecordHash({ channel, deposit, reclaimableAfter, refundAnchor }: TabRecord): string {
  const { payer, payerAuthorizer, receiver, receiverAuthorizer, token, withdrawDelay, salt } = channel;
  return keccak256(
    AbiCoder.defaultAbiCoder().encode(
      [TAB_RECORD_TUPLE],
      [[[payer, payerAuthorizer, receiver, receiverAuthorizer, token, withdrawDelay, salt], deposit, reclaimableAfter, refundAnchor]],
    ),
  );
}

/**
 * Whether `recorded`, the pool's record of the lease's note (PrivacyPool.spendRecordOf), is what the lease's relay
 * writes: PLAIN for a spend that pays no payment; for a pool authorization, its record (`domain`, given for such a
 * lease, says under what); for a tab, the hash of its TabRecord; REFUNDED once what it paid came back (only the
 * record's own payment is ever refunded). A pool authorization's lease of an earlier version, which did not store its
 * refund anchor, is matched by any authorization's record.
 */
export function recordsLease(recorded: string, lease: LeaseRecord, domain?: PoolDomain): boolean {
  if (lease.payment === null) return recorded === PLAIN_RECORD;
  if (recorded === REFUNDED_RECORD) return true;
  const tab = tabRecordOf(lease);
  if (tab !== undefined) return recorded === tabRecordHash(tab);
  const authorized = domain === undefined ? undefined : poolAuthorizationRecordOf(lease, domain);
  return authorized === undefined ? BigInt(recorded) > 2n : recorded === authorized;
}

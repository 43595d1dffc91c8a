import type { AgentRecord, LeaseRecord, LeaseState, StoredAuthorization, SweepOutcome, SweepRecord } from "./relayer-store.js";

/**
 * A result row of either backend, column name to value as its driver returns it. Both keep amounts and field
 * elements as decimal text (PostgreSQL's NUMERIC reads back as a string too) and lists as JSON text; PostgreSQL's
 * BIGINT reads back as a string, SQLite's INTEGER as a number, so numbers go through Number().
 */
export type Row = Record<string, unknown>;

export const toAgent = (row: Row): AgentRecord => ({
  id: String(row.id),
  name: String(row.name),
  publicKey: String(row.public_key),
  ownerWallet: String(row.owner_wallet),
  perTransactionLimit: BigInt(String(row.per_transaction_limit)),
  dailyLimit: BigInt(String(row.daily_limit)),
  providerWhitelist: JSON.parse(String(row.provider_whitelist)) as string[],
  categories: JSON.parse(String(row.categories)) as string[],
  createdAt: String(row.created_at),
});

export const toLease = (row: Row): LeaseRecord => ({
  nullifierHash: BigInt(String(row.nullifier_hash)),
  state: String(row.state) as LeaseState,
  token: String(row.token),
  fingerprint: String(row.fingerprint),
  recipient: String(row.recipient),
  gross: BigInt(String(row.gross)),
  fee: BigInt(String(row.fee)),
  changeCommitment: BigInt(String(row.change_commitment)),
  remainingValue: row.remaining_value === null ? null : BigInt(String(row.remaining_value)),
  fundingTxHash: row.funding_tx_hash === null ? null : String(row.funding_tx_hash),
  proofTimeMs: row.proof_time_ms === null ? null : Number(row.proof_time_ms),
  payment:
    row.x_payment === null
      ? null
      : {
          xPayment: String(row.x_payment),
          validBefore: Number(row.valid_before),
          // Leases of earlier versions kept no nonce column: it is the signed authorization's.
          nonce: row.payment_nonce === null ? signedNonceOf(String(row.x_payment)) : String(row.payment_nonce),
          refundAnchor: row.refund_anchor === null || row.refund_anchor === undefined ? null : BigInt(String(row.refund_anchor)),
        },
  updatedAt: String(row.updated_at),
});

/** The EIP-3009 nonce of the authorization an x402 payment header (base64 JSON) carries. */
function signedNonceOf(xPayment: string): string {
  const payment = JSON.parse(Buffer.from(xPayment, "base64").toString("utf8")) as { payload?: { authorization?: { nonce?: string } } };
  return String(payment.payload?.authorization?.nonce);
}

/** The access_token_tx_hash of an authorization carried over to a change note (no transaction paid it). */
export const INHERITED = "inherited";

export const toAuthorization = (row: Row): StoredAuthorization =>
  row.access_token_tx_hash === INHERITED ? { inherited: true, label: row.label === null || row.label === undefined ? null : BigInt(String(row.label)) } : { inherited: false };

export const toSweep = (row: Row): SweepRecord => ({
  nullifierHash: BigInt(String(row.nullifier_hash)),
  payer: String(row.payer),
  amount: BigInt(String(row.amount)),
  outcome: String(row.outcome) as SweepOutcome,
  depositTxHash: row.deposit_tx_hash === null ? null : String(row.deposit_tx_hash),
  sweptAt: String(row.swept_at),
});

// The column values of a new row, in the order both backends' INSERT statements list the columns.

export const agentValues = (agent: AgentRecord) => [
  agent.id,
  agent.name,
  agent.publicKey,
  agent.ownerWallet,
  agent.perTransactionLimit.toString(),
  agent.dailyLimit.toString(),
  JSON.stringify(agent.providerWhitelist),
  JSON.stringify(agent.categories),
  agent.createdAt,
];

/** A lease's values, less the state and the transaction fields a reservation always starts without. */
export const reservedLeaseValues = (lease: LeaseRecord) => [
  lease.nullifierHash.toString(),
  lease.token,
  lease.fingerprint,
  lease.recipient,
  lease.gross.toString(),
  lease.fee.toString(),
  lease.changeCommitment.toString(),
  lease.remainingValue?.toString() ?? null,
  lease.payment?.xPayment ?? null,
  lease.payment?.validBefore ?? null,
  lease.payment?.nonce ?? null,
  lease.payment?.refundAnchor?.toString() ?? null,
  lease.updatedAt,
];

export const sweepValues = (record: SweepRecord) => [
  record.nullifierHash.toString(),
  record.payer,
  record.amount.toString(),
  record.outcome,
  record.depositTxHash,
  record.sweptAt,
];

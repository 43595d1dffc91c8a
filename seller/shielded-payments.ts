import type { SettleResponse, VerifyResponse } from "@x402/core/types";
import { isError, type FeeData, type TransactionReceipt } from "ethers";
import { gasCostInUsdc } from "../lib/gas-cost.js";
import { toSolidityProof, type SolidityWithdrawProof } from "../sdk/circuit/solidity-proof.js";
import { encodeSellerPayment, type Withdrawal } from "../sdk/circuit/context.js";
import type { IEntrypoint } from "../types/ethers-contracts/contracts/interfaces/IEntrypoint.js";
import type { IPrivacyPool } from "../types/ethers-contracts/contracts/interfaces/IPrivacyPool.js";
import {
  readShieldedPayment,
  shieldedTermsProblems,
  ShieldedPayloadSchema,
  ShieldedRequirementSchema,
  type ReadShieldedPayment,
  type ShieldedFacilitatorExtra,
  type ShieldedRequirement,
} from "../sdk/x402/shielded.js";
import { settleUnavailable } from "./outage-answers.js";
import type { PaymentClaims } from "./payment-claims.js";
import { SHIELDED_REASONS, type ShieldedReason } from "./shielded-reasons.js";

/** A relay of a shielded-proof payment, as Entrypoint.relay takes it. */
export interface ShieldedRelay {
  withdrawal: Withdrawal;
  proof: SolidityWithdrawProof;
  scope: bigint;
  stateTreeSize: bigint;
  /** The most gas it may use, and the highest gas price its fee pays for at that gas. */
  gasLimit: bigint;
  maxFeePerGas: bigint;
}

/**
 * The fee fields of a relay that never costs more gas than the payment's fee pays: its gas limit, the fee's price at
 * that gas as maxFeePerGas, and the network's tip within it. Whoever sends it, the seller's own facilitator or the
 * relayer's seller routes.
 */
export function cappedFeeFields(relay: Pick<ShieldedRelay, "gasLimit" | "maxFeePerGas">, fees: FeeData) {
  const tip = fees.maxPriorityFeePerGas ?? 0n;
  return { gasLimit: relay.gasLimit, maxFeePerGas: relay.maxFeePerGas, maxPriorityFeePerGas: tip < relay.maxFeePerGas ? tip : relay.maxFeePerGas };
}

/** Sent nothing: the relay can be tried again, and its claim given back. */
export class RelayNotSent extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "RelayNotSent";
  }
}

/** Mined, and reverted: the chain refused the relay. */
export class RelayReverted extends Error {
  constructor(readonly transaction: string) {
    super(`the relay ${transaction} reverted`);
    this.name = "RelayReverted";
  }
}

/** Sent, and not mined yet when the wait for it ended: the payment may still be paid by it. */
export class RelayPending extends Error {
  constructor(readonly transaction: string) {
    super(`the relay ${transaction} was sent and is not mined yet`);
    this.name = "RelayPending";
  }
}

/** The chain did not answer in time, or answered with a fault: no verdict on the payment. */
class ChainUnavailable extends Error {
  constructor(what: string, cause: unknown) {
    super(`${what}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "ChainUnavailable";
  }
}

/** `call`, or ChainUnavailable when it fails or takes longer than `timeoutMs`. */
async function fromChain<T>(what: string, timeoutMs: number, call: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([call(), timeout]);
  } catch (error) {
    throw error instanceof ChainUnavailable ? error : new ChainUnavailable(what, error);
  } finally {
    clearTimeout(timer);
  }
}

/** What the facilitator verifies and settles with: its chain, its fee, where it keeps claims and how it relays. */
export interface ShieldedPaymentsDeps {
  /** The deployment: its chain, entrypoint, pool, the pool's asset (USDC) and scope. */
  deployment: { chainId: number; entrypoint: string; privacyPool: string; usdc: string; scope: bigint };
  /** The entrypoint, connected to a provider; simulations run from `settler`. */
  entrypoint: IEntrypoint;
  pool: IPrivacyPool;
  /** The account that sends the relays and pays their gas. */
  settler: string;
  /** Who the facilitator's fees go to; a payment whose fee goes elsewhere is not relayed. */
  feeRecipient: string;
  /** The least fee announced in `supported`; a payment must also pay the relay's gas at the gas price of the moment. */
  minimumFee: bigint;
  /** Atomic USDC per ETH, which converts a relay's gas into the fee it must at least pay. */
  usdcPerEth: bigint;
  /** The chain's gas price now, in wei (what a relay sent now pays at most per gas). */
  gasPrice(): Promise<bigint>;
  claims: PaymentClaims;
  /**
   * Sends the relay and resolves once it is mined; rejects with RelayNotSent when nothing left, RelayPending when it
   * left and is not mined yet, else with what happened.
   */
  sendRelay(relay: ShieldedRelay): Promise<TransactionReceipt>;
  /** The transaction that spent the note of `nullifierHash` (the pool's Withdrawn event), if it can be found. */
  findSpend(nullifierHash: bigint): Promise<string | undefined>;
  nowSeconds?: () => number;
  /** The longest any one read of the chain may take before the payment is answered as an outage; default 10 s. */
  chainTimeoutMs?: number;
}

/** The longest one chain read of a verify or settle takes by default. */
export const DEFAULT_CHAIN_TIMEOUT_MS = 10_000;
/**
 * How long a settle's claim on a payment holds off other settles relaying it: a relay sent and mined, or replaced
 * (the relayer's inclusion wait and its replacement's, the plug-in's 30 s wait, with room).
 */
const CLAIM_LEASE_SECONDS = 45;
/** How long a settle that finds the payment claimed by another settle waits for the pool to pay it. */
const CLAIMED_WAIT_MS = 5_000;

/** A relay's gas limit over its simulation's estimate: inserts at other leaf indexes hash more levels. */
const GAS_LIMIT_PERCENT = 125n;
/** The least time a payment must still be relayable when it is verified: the time to send and mine its relay. */
const SETTLE_MARGIN_SECONDS = 5;
/** How far past the entry's maxTimeoutSeconds a payment's window may reach: the buyer's clock against ours. */
const CLOCK_SLACK_SECONDS = 60;

/** How a settle answers: paid by `transaction`, refused for a reason, or no verdict (an outage). */
interface SettleAnswers {
  succeeded(transaction: string): SettleResponse;
  failed(reason: ShieldedReason, message: string, transaction?: string): SettleResponse;
  unavailable(why: string): SettleResponse;
}

type Checked =
  | { ok: false; reason: ShieldedReason; message: string }
  | { ok: true; read: ReadShieldedPayment; requirement: ShieldedRequirement; paid: true }
  | { ok: true; read: ReadShieldedPayment; requirement: ShieldedRequirement; paid: false; relay: ShieldedRelay };

const refused = (reason: ShieldedReason, message: string): Checked => ({ ok: false, reason, message });

/**
 * The seller's side of the shielded-proof method (docs/x402-interop.md, "Shielded proof"): `verify` checks a payment
 * without a transaction (its terms against the entry, its window, the fee against the relay's gas now, and an
 * eth_estimateGas of the relay, which runs every check of the pool: proof, roots, nullifier); `settle` relays it, and
 * the pool pays payTo straight from the note. Outcomes are read from what the chain did: a payment the pool paid, by
 * anyone's transaction (a front-runner's copy, a settle that crashed after sending), is recognized by the spend
 * record, which holds the proof's context, and answered `success` whenever it is settled again: the seller's server
 * (ServeOnce) keeps each payment to one answer. A chain that does not answer is an outage, answered with a retryable
 * reason, never a refusal.
 */
export class ShieldedPayments {
  private readonly nowSeconds: () => number;
  private readonly chainTimeoutMs: number;

  constructor(private readonly deps: ShieldedPaymentsDeps) {
    this.nowSeconds = deps.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
    this.chainTimeoutMs = deps.chainTimeoutMs ?? DEFAULT_CHAIN_TIMEOUT_MS;
  }

  /** What the facilitator announces for `exact` on its chain: where it relays, to whom its fee goes and the least fee. */
  extra(): ShieldedFacilitatorExtra {
    const { deployment, feeRecipient, minimumFee } = this.deps;
    return {
      assetTransferMethod: "shielded-proof",
      poolContracts: [deployment.privacyPool],
      entrypoint: deployment.entrypoint,
      feeRecipient,
      fee: minimumFee.toString(),
    };
  }

  get network(): `eip155:${number}` {
    return `eip155:${this.deps.deployment.chainId}`;
  }

  async verify(paymentPayload: unknown, requirements: unknown): Promise<VerifyResponse> {
    const checked = await this.check(paymentPayload, requirements);
    const payer = this.deps.deployment.privacyPool;
    return checked.ok ? { isValid: true, payer } : { isValid: false, invalidReason: checked.reason, invalidMessage: checked.message, payer };
  }

  async settle(paymentPayload: unknown, requirements: unknown): Promise<SettleResponse> {
    const payer = this.deps.deployment.privacyPool;
    const network = this.network;
    const failed = (reason: ShieldedReason, message: string, transaction = ""): SettleResponse => ({ success: false, errorReason: reason, errorMessage: message, payer, transaction, network });
    const succeeded = (transaction: string): SettleResponse => ({ success: true, payer, transaction, network });
    const checked = await this.check(paymentPayload, requirements);
    if (!checked.ok) return failed(checked.reason, checked.message);
    const { read } = checked;
    try {
      if (checked.paid) return succeeded(await this.spendOf(read));
      if (!(await this.deps.claims.claim(read.nullifierHash, CLAIM_LEASE_SECONDS))) {
        // Another settle is relaying it: its relay pays these terms, or the claim lapses and the next settle relays.
        if (await this.paidWithin(read, CLAIMED_WAIT_MS)) return succeeded(await this.spendOf(read));
        return failed(SHIELDED_REASONS.inProgress, "Another settle is relaying this payment now; settle it again in a few seconds: it succeeds once the pool paid it.");
      }
      return await this.relay(checked.relay, read, { succeeded, failed, unavailable: (why) => settleUnavailable(network, why, payer) });
    } catch (error) {
      return settleUnavailable(network, (error as Error).message, payer);
    }
  }

  private async relay(relay: ShieldedRelay, read: ReadShieldedPayment, { succeeded, failed, unavailable }: SettleAnswers): Promise<SettleResponse> {
    const { claims } = this.deps;
    let receipt: TransactionReceipt | Error;
    try {
      receipt = await this.deps.sendRelay(relay);
    } catch (error) {
      if (error instanceof RelayNotSent) {
        await claims.release(read.nullifierHash);
        return unavailable(`the relay was not sent: ${error.message}`);
      }
      if (error instanceof RelayPending) {
        return failed(SHIELDED_REASONS.settlementPending, `The relay ${error.transaction} is sent and not mined yet; settle again to read its outcome.`, error.transaction);
      }
      receipt = error instanceof Error ? error : new Error(String(error));
    }
    if (await this.paidBy(read)) return succeeded(receipt instanceof Error ? await this.spendOf(read) : receipt.hash);
    await claims.release(read.nullifierHash);
    // Mined and reverted, and the pool did not pay these terms by anyone's transaction: the chain's verdict.
    if (receipt instanceof RelayReverted) return failed(SHIELDED_REASONS.settleFailed, `The pool did not pay this payment: ${receipt.message}.`);
    // Lost on its way (the node refused it, the RPC failed): no verdict, and nothing paid yet.
    return unavailable(`the relay did not reach the chain: ${(receipt as Error).message}`);
  }

  /** The transaction that paid a payment the pool's record says is paid. */
  private async spendOf(read: ReadShieldedPayment): Promise<string> {
    const transaction = await fromChain("the pool's Withdrawn events", this.chainTimeoutMs, () => this.deps.findSpend(read.nullifierHash));
    if (transaction === undefined) throw new ChainUnavailable("the pool's Withdrawn events", new Error("the spend of a paid payment was not found among them yet"));
    return transaction;
  }

  /** Whether the pool's record of the note is this payment's context: these terms were paid, by anyone. */
  private async paidBy(read: ReadShieldedPayment): Promise<boolean> {
    return (await this.spendRecordOf(read)) === read.signals.context;
  }

  /** The pool's record of the note: 0 while unspent, else the context of the withdrawal that spent it. */
  private async spendRecordOf(read: ReadShieldedPayment): Promise<bigint> {
    return BigInt(await fromChain("the pool's spend record", this.chainTimeoutMs, () => this.deps.pool.spendRecordOf(read.nullifierHash)));
  }

  private async paidWithin(read: ReadShieldedPayment, waitMs: number): Promise<boolean> {
    for (const until = Date.now() + waitMs; ; ) {
      if (await this.paidBy(read)) return true;
      if (Date.now() >= until) return false;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  private async check(paymentPayload: unknown, requirements: unknown): Promise<Checked> {
    try {
      return await this.checkOnChain(paymentPayload, requirements);
    } catch (error) {
      if (!(error instanceof ChainUnavailable)) throw error;
      return refused(SHIELDED_REASONS.facilitatorUnavailable, `The facilitator cannot read the chain now (${error.message}); nothing moved. Present the same payment again.`);
    }
  }

  private async checkOnChain(paymentPayload: unknown, requirements: unknown): Promise<Checked> {
    const { deps } = this;
    const accepted = (paymentPayload as { accepted?: { extra?: { reference?: unknown } } } | undefined)?.accepted;
    // The reference is the buyer's: the one the 402 it answered gave, which the proof binds (the seller checked it).
    const entry = ShieldedRequirementSchema.safeParse({
      ...(requirements as object),
      extra: { ...(requirements as { extra?: object } | undefined)?.extra, reference: accepted?.extra?.reference },
    });
    if (!entry.success) return refused(SHIELDED_REASONS.invalidRequirements, `The entry is not a shielded-proof entry: ${entry.error.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`).join("; ")}.`);
    const requirement = entry.data;
    const payload = ShieldedPayloadSchema.safeParse((paymentPayload as { payload?: unknown } | undefined)?.payload);
    if (!payload.success) return refused(SHIELDED_REASONS.invalidPayload, `The payment is not a shielded-proof payload: ${payload.error.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`).join("; ")}.`);

    const { deployment } = deps;
    const chain = { chainId: deployment.chainId, entrypoint: deployment.entrypoint, scope: deployment.scope };
    const pool = deployment.privacyPool;
    const entryProblems = [
      requirement.asset.toLowerCase() !== deployment.usdc.toLowerCase() && `its asset ${requirement.asset} is not this pool's ${deployment.usdc}`,
      !requirement.extra.poolContracts.some((listed) => listed.toLowerCase() === pool.toLowerCase()) && `it lists no pool this facilitator relays from (${pool})`,
      requirement.extra.feeRecipient.toLowerCase() !== deps.feeRecipient.toLowerCase() && `its fee goes to ${requirement.extra.feeRecipient}, not to this facilitator (${deps.feeRecipient})`,
      BigInt(requirement.extra.fee) < deps.minimumFee && `its fee ${requirement.extra.fee} is below this facilitator's ${deps.minimumFee}`,
    ].filter((problem): problem is string => typeof problem === "string");
    if (entryProblems.length > 0) return refused(SHIELDED_REASONS.invalidRequirements, `This facilitator does not relay this entry: ${entryProblems.join("; ")}.`);

    let read: ReadShieldedPayment;
    try {
      read = readShieldedPayment(payload.data, requirement);
    } catch (error) {
      return refused(SHIELDED_REASONS.invalidPayload, `The payment's public signals do not read: ${(error as Error).message}.`);
    }
    const termsProblems = shieldedTermsProblems(read, payload.data, requirement, chain);
    if (termsProblems.length > 0) return refused(SHIELDED_REASONS.termsMismatch, `The payment does not pay this entry: ${termsProblems.join("; ")}.`);

    // Paid already, by anyone: owed its answer, whatever the clock says now.
    const record = await this.spendRecordOf(read);
    if (record === read.signals.context) return { ok: true, read, requirement, paid: true };
    if (record !== 0n) return refused(SHIELDED_REASONS.noteSpent, "The note of this payment was spent by another payment: nothing of it can pay this one.");

    const now = this.nowSeconds();
    const validBefore = Number(read.payment.validBefore);
    if (validBefore <= now + SETTLE_MARGIN_SECONDS) return refused(SHIELDED_REASONS.expired, `The payment was relayable until ${validBefore}; it is ${now}. Pay again.`);
    if (validBefore > now + requirement.maxTimeoutSeconds + CLOCK_SLACK_SECONDS) {
      return refused(SHIELDED_REASONS.windowTooLong, `The payment stays relayable until ${validBefore}, past the entry's ${requirement.maxTimeoutSeconds} s from now.`);
    }

    const withdrawal = { processooor: chain.entrypoint, data: encodeSellerPayment(read.payment) };
    const proof = toSolidityProof({ proof: payload.data.proof, publicSignals: payload.data.publicSignals });
    let estimate: bigint;
    try {
      estimate = await fromChain("the relay's simulation", this.chainTimeoutMs, () =>
        deps.entrypoint.relay.estimateGas(withdrawal, proof, deployment.scope, read.stateTreeSize, { from: deps.settler }),
      );
    } catch (error) {
      const revert = revertOf(error);
      if (revert === undefined) throw error;
      return this.simulationRefusal(revert);
    }
    const gasLimit = (estimate * GAS_LIMIT_PERCENT) / 100n;
    const gasPrice = await fromChain("the gas price", this.chainTimeoutMs, () => deps.gasPrice());
    const cost = gasCostInUsdc(gasLimit, gasPrice, deps.usdcPerEth);
    if (read.payment.fee < cost) {
      return refused(SHIELDED_REASONS.feeBelowGas, `The payment's fee ${read.payment.fee} does not pay its relay: ${gasLimit} gas at ${gasPrice} wei costs ${cost} now. Pay with a fee of at least ${cost}.`);
    }
    const maxFeePerGas = (read.payment.fee * 10n ** 18n) / (gasLimit * deps.usdcPerEth);
    return { ok: true, read, requirement, paid: false, relay: { withdrawal, proof, scope: deployment.scope, stateTreeSize: read.stateTreeSize, gasLimit, maxFeePerGas } };
  }

  /** The pool's or the entrypoint's reason for refusing the relay's simulation, as a verify refusal. */
  private simulationRefusal({ data, message }: { data: string; message: string }): Checked {
    const parsed = data === "0x" ? null : (this.deps.entrypoint.interface.parseError(data) ?? this.deps.pool.interface.parseError(data));
    const name = parsed?.name;
    switch (name) {
      case "NullifierAlreadySpent":
        // The mined record said unspent: a pending transaction spends it (this payment's relay, or another spend of
        // the note). Once it is mined the record tells which: this payment served, or the note spent elsewhere.
        return refused(SHIELDED_REASONS.inProgress, "A pending transaction spends this payment's note; present the payment again once it is mined.");
      case "UnknownStateRoot":
      case "StateTreeDepthMismatch":
      case "UnknownAspRoot":
      case "AspRootRevoked":
      case "AspTreeDepthMismatch":
        return refused(SHIELDED_REASONS.staleRoot, `The pool no longer accepts the roots the proof uses (${name}): prove again against the current trees.`);
      case "InvalidProof":
        return refused(SHIELDED_REASONS.invalidProof, "The pool's verifier rejects the proof.");
      case "SellerPaymentExpired":
        // Our clock gave the window at least SETTLE_MARGIN_SECONDS more: the chain's block time runs ahead of it.
        return refused(SHIELDED_REASONS.expired, "The payment's window has closed on chain, though not by this facilitator's clock: the chain's block time runs ahead of the wall clock (a local node stamping a burst of blocks a second apart does). Pay again once the clocks meet.");
      default:
        return refused(SHIELDED_REASONS.relayRefused, `The pool refuses the relay${name === undefined ? "" : ` (${name})`}: ${message}.`);
    }
  }
}

/** The revert of a simulation the chain refused; undefined for a fault of the RPC or a timeout (no verdict). */
function revertOf(error: unknown): { data: string; message: string } | undefined {
  const cause = error instanceof ChainUnavailable ? error.cause : error;
  if (!isError(cause, "CALL_EXCEPTION")) return undefined;
  return { data: typeof cause.data === "string" ? cause.data : "0x", message: cause.message };
}

/**
 * The transaction that spent the note of `nullifierHash`, by the pool's Withdrawn events of the last `lookbackBlocks`
 * blocks (a payment is relayable only within its window, so its spend is recent).
 */
export async function spendingTransaction(pool: IPrivacyPool, nullifierHash: bigint, lookbackBlocks = 10_000): Promise<string | undefined> {
  const latest = await pool.runner!.provider!.getBlockNumber();
  // Up to the chain's latest block, not the provider's cached number: a spend mined a moment ago is in it.
  const events = await pool.queryFilter(pool.filters.Withdrawn(), Math.max(0, latest - lookbackBlocks), "latest");
  return events.find((event) => event.args.spentNullifierHash === nullifierHash)?.transactionHash;
}

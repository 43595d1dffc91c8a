import { changeNoteOf, deriveChangeSecrets, nullifierHashOf, type Note, type NoteSecrets, type WithdrawProof } from "../../sdk/index.js";
import type { IndexerClient } from "../../indexer/client.js";
import type { AccessFeeGate } from "./access-fee-gate.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { gasCostInUsdc } from "../../lib/gas-cost.js";
import { RelayerError } from "../errors.js";
import {
  feeOf,
  formatUsdc,
  minimumSettleFor,
  relayGasAt,
  smallestGrossForFee,
  takeBpsFor,
  type FeeFloor,
  type NetworkPricing,
  type TierName,
} from "../pricing/pricing.js";
import { privacyBlock, type Custody, type PrivacyBlock } from "../pricing/privacy.js";
import type { LeasedWithdrawalOrder, LeasedWithdrawals } from "../settlement/leased-withdrawals.js";
import { spendableNote } from "../settlement/note-status.js";
import type { ProvenSpends } from "../settlement/proven-spends.js";
import type { QuoteRoute, SignedQuote } from "../settlement/quote.js";
import type { RelayTerms, Spend } from "../settlement/spend.js";
import type { LeaseRecord } from "../store/relayer-store.js";

export interface FacilitatorDeps {
  chain: PoolChain;
  indexer: IndexerClient;
  withdrawals: LeasedWithdrawals;
  proofs: ProvenSpends;
  accessFee: AccessFeeGate;
  agents: AgentRegistry;
  pricing: NetworkPricing;
  tier: TierName;
  treasury: string;
  /** Atomic USDC per ETH: converts a relay's gas cost into the fee floor (RELAYER_USDC_PER_ETH). */
  usdcPerEth: bigint;
}

/** A payment: to whom, how much, and the optional agent it is made for. */
export interface Invoice {
  payTo: string;
  amount: bigint;
  /** CAIP-2 network the invoice names, when it names one. */
  network?: string;
  agentId?: string;
  category?: string;
}

/** A payment out of a note the agent sent (custodial). */
export interface PaymentOrder extends Invoice {
  note: Note;
}

/** A payment the agent proves itself (non-custodial, docs/design.md 10): the quote it proved against and the proof. */
export interface ProvenPaymentOrder extends Invoice {
  quote: SignedQuote;
  proof: WithdrawProof;
}

export interface VerifyResult {
  valid: boolean;
  anonymitySet: number | null;
  reason?: string;
  message?: string;
}

/** A spend from its settled lease: what left the pool and the privacy verdict. */
export interface SettledSpend {
  txHash: string;
  /** What left the pool; the recipient got amount - fee. */
  amount: bigint;
  fee: bigint;
  /** Null when the relayer did not prove (the agent did), or the settlement was recovered from the chain after the relayer that proved it died. */
  proofTimeMs: number | null;
  privacy: PrivacyBlock;
  /** Answered from an earlier identical request: nothing was withdrawn now. */
  replayed: boolean;
  lease: LeaseRecord;
}

/** A spend of a note the agent sent: the relayer knows the change note and returns it. */
export interface SpendResult extends SettledSpend {
  remainingValue: bigint;
  /** The change note, present when value remains. */
  nextDeposit?: Note;
}

/** A spend the agent proved: of the change note the relayer knows only the commitment. */
export interface ProvenSpendResult extends SettledSpend {
  changeCommitment: bigint;
}

/** What a spend asks of the leased withdrawals, besides the note or the proof. */
export interface SpendTerms {
  amount: bigint;
  recipient: string;
  /** open-tab: the tab the quote fixed. */
  tab?: RelayTerms["tab"];
  /** settle-x402 proven: the pool's transfer the quote fixed. */
  poolTransfer?: RelayTerms["poolTransfer"];
  /** The lease's route-specific terms (see LeasedWithdrawalOrder.terms). */
  terms: LeasedWithdrawalOrder["terms"];
  buildPayment?: LeasedWithdrawalOrder["buildPayment"];
  /**
   * An access fee paid out of the note (relayer/buyer/access-fee-relay.ts): the nullifier hash it authorizes. The whole
   * amount goes to the recipient, the treasury, with no take: it must cover the fee and its relay's gas
   * (AccessFeeGate.assertCoversRelay) in place of the fee floor.
   */
  authorizedNullifierHash?: bigint;
}

/** What a spend leaves to record once it is made. */
export interface SpendRecord {
  nullifierHash: bigint;
  amount: bigint;
  agentId?: string;
  /**
   * The change note's nullifier hash and its deposit's label, when the relayer knows them (custodial): the access-fee
   * authorization moves to it, for a note of that label only.
   */
  change?: { nullifierHash: bigint; label: bigint };
}

/** The facilitator's operations (docs/api.md section 4), free of HTTP: routes parse, call one of these, serialize. */
export class Facilitator {
  constructor(private readonly deps: FacilitatorDeps) {}

  get takeBps(): bigint {
    return takeBpsFor(this.deps.tier, this.deps.pricing);
  }

  get minimumSettle(): bigint {
    return minimumSettleFor(this.deps.tier, this.deps.pricing);
  }

  /**
   * The anonymity set of a payment withdrawing `withdrawnValue`, from the indexer (AspCurator.anonymitySetOf), or
   * null when it cannot be had (never a guess).
   */
  async anonymitySet(withdrawnValue: bigint): Promise<number | null> {
    return (await this.anonymityOf(withdrawnValue)).anonymitySet;
  }

  /** The anonymity set of a payment withdrawing `withdrawnValue` and the ASP root it was counted under; nulls when unknown. */
  async anonymityOf(withdrawnValue: bigint): Promise<{ anonymitySet: number | null; aspRoot: bigint | null }> {
    return this.deps.indexer.anonymitySet(withdrawnValue).then(
      ({ anonymitySet, aspRoot }) => ({ anonymitySet, aspRoot }),
      () => ({ anonymitySet: null, aspRoot: null }),
    );
  }

  /** docs/api.md 4.2: whether the note can pay the invoice now. Spends nothing; a "no" is data, with a reason. */
  async verify(order: PaymentOrder): Promise<VerifyResult> {
    const anonymitySet = await this.anonymitySet(order.amount);
    try {
      this.checkInvoice(order, order.note.value);
      const nullifierHash = nullifierHashOf(order.note.nullifier);
      await this.deps.withdrawals.assertNotLeased(nullifierHash);
      await this.assertCoversRelay(order.amount);
      await spendableNote(order.note, this.deps.indexer, this.deps.chain);
      await this.deps.accessFee.assertAuthorized(nullifierHash, order.note.label);
      return { valid: true, anonymitySet };
    } catch (error) {
      if (!(error instanceof RelayerError) || error.status >= 500) throw error;
      return { valid: false, anonymitySet, reason: error.code.toLowerCase(), message: error.message };
    }
  }

  /** docs/api.md 4.3 (and 4.7, x402-pay): pays exactly `amount` out of the note to `payTo`, less the per-settle take. */
  async settle(order: PaymentOrder): Promise<SpendResult> {
    this.checkInvoice(order, order.note.value);
    await this.checkAgent(order);
    const nullifierHash = nullifierHashOf(order.note.nullifier);
    await this.deps.accessFee.assertAuthorized(nullifierHash, order.note.label);
    const result = await this.spend(order.note, { amount: order.amount, recipient: order.payTo, terms: ["payment"] });
    await this.recordSpend(spendRecordOf(order.note, order, result), result.replayed);
    return result;
  }

  /**
   * docs/api.md 4.10: what a proof of the payment of `amount` to `payTo` out of the note of `nullifierHash` must bind.
   * Every check of settle runs here, bar the note's value, which only the agent knows.
   */
  async quote(invoice: Invoice & { nullifierHash: bigint }): Promise<SignedQuote> {
    this.checkInvoice(invoice);
    await this.checkAgent(invoice);
    return this.issueQuote({ route: "settle", nullifierHash: invoice.nullifierHash, recipient: invoice.payTo, amount: invoice.amount });
  }

  /** docs/api.md 4.10: settle with the agent's proof of a quote; the relayer relays it and never sees the note. */
  async settleProven(order: ProvenPaymentOrder): Promise<ProvenSpendResult> {
    this.checkInvoice(order);
    await this.checkAgent(order);
    const { nullifierHash } = order.quote;
    // A proof shows no label: an authorization carried over to the note from a custodial spend does not hold.
    await this.deps.accessFee.assertAuthorized(nullifierHash);
    const result = await this.spendProven(order.quote, order.proof, { route: "settle", amount: order.amount, recipient: order.payTo, terms: ["payment"] });
    await this.recordSpend({ nullifierHash, amount: order.amount, agentId: order.agentId }, result.replayed);
    return result;
  }

  /**
   * A quote for a withdrawal of `amount` to `recipient` at this relayer's take, once the note may be spent now: its
   * access fee paid when the gate is on, no lease on it, unspent on chain, and the amount covering the relay. A quote
   * of an access fee (`authorizedNullifierHash`) is what the gate asks for: the gate does not apply to it, it takes no
   * take, and its amount covers the fee and the relay's gas (AccessFeeGate.assertCoversRelay).
   */
  async issueQuote({
    route,
    nullifierHash,
    recipient,
    amount,
    tab,
    poolTransfer,
    authorizedNullifierHash,
  }: {
    route: QuoteRoute;
    nullifierHash: bigint;
    recipient: string;
    amount: bigint;
    tab?: RelayTerms["tab"];
    poolTransfer?: RelayTerms["poolTransfer"];
    authorizedNullifierHash?: bigint;
  }): Promise<SignedQuote> {
    const accessFee = authorizedNullifierHash !== undefined;
    const assertUnspent = async () => {
      if (await this.deps.chain.isNullifierSpent(nullifierHash)) {
        throw new RelayerError("ALREADY_SPENT", "The note is already spent on chain. Use the change note of the settlement that spent it.");
      }
    };
    // Independent reads, made at once; a refusal is the first in this order, as if they ran one after another.
    const checks = await Promise.allSettled([
      // A proof shows nothing of the note's label: an authorization carried over from a custodial spend does not hold.
      accessFee ? undefined : this.deps.accessFee.assertAuthorized(nullifierHash),
      this.deps.withdrawals.assertNotLeased(nullifierHash),
      assertUnspent(),
      accessFee ? this.deps.accessFee.assertCoversRelay(amount) : this.assertCoversRelay(amount),
    ]);
    const refused = checks.find((check) => check.status === "rejected");
    if (refused) throw refused.reason;
    const terms = { route, nullifierHash, recipient, feeRecipient: this.deps.treasury, feeBps: this.feeBpsOf({ authorizedNullifierHash }), withdrawnValue: amount };
    return this.deps.proofs.quote({ ...terms, ...(accessFee && { authorizedNullifierHash }), ...(poolTransfer && { poolTransfer }), ...(tab && { tab }) });
  }

  /** The take of a spend: the tier's, or none on an access fee, whose whole amount is the fee. */
  private feeBpsOf({ authorizedNullifierHash }: { authorizedNullifierHash?: bigint }): bigint {
    return authorizedNullifierHash === undefined ? this.takeBps : 0n;
  }

  /**
   * After a spend (not a replay): the agent's spend counts, and the change note keeps the deposit's access-fee
   * authorization when the relayer knows its nullifier hash (it does not for a spend the agent proved, docs/design.md 10).
   */
  async recordSpend(record: SpendRecord, replayed: boolean): Promise<void> {
    if (replayed) return;
    if (record.change !== undefined) await this.deps.accessFee.carryOver(record.nullifierHash, record.change.nullifierHash, record.change.label);
    if (record.agentId !== undefined) await this.deps.agents.recordSpend(record.agentId, record.amount);
  }

  /** The registry's limits of the agent an invoice names, if any. */
  private async checkAgent(invoice: Invoice): Promise<void> {
    if (invoice.agentId === undefined) return;
    await this.deps.agents.check({ agentId: invoice.agentId, provider: invoice.payTo, amount: invoice.amount, category: invoice.category });
  }

  /**
   * docs/api.md 4.6: a plain withdrawal to `recipient`, the whole note when `amount` is absent. The gates of every spend
   * apply: the access fee when enforced, the minimum settle, and in paid mode the fee floor. A note worth less
   * can still leave the pool through Entrypoint.relay sent by its owner, who then pays the gas.
   */
  async withdraw(note: Note, recipient: string, amount: bigint = note.value): Promise<SpendResult> {
    if (amount > note.value) {
      throw new RelayerError("INVALID_PAYMENT_AMOUNT", `amountAtomic ${amount} exceeds the note's value ${note.value}.`);
    }
    await this.deps.accessFee.assertAuthorized(nullifierHashOf(note.nullifier), note.label);
    const result = await this.spend(note, { amount, recipient, terms: ["withdraw"] });
    await this.recordSpend(spendRecordOf(note, { amount }, result), result.replayed);
    return result;
  }

  /** Spends `note` under its lease, the relayer proving; replays an identical earlier spend. */
  async spend(note: Note, spend: SpendTerms & { changeSecrets?: NoteSecrets }): Promise<SpendResult> {
    const changeSecrets = spend.changeSecrets ?? deriveChangeSecrets(note);
    const settled = await this.leased({ kind: "note", note, changeSecrets }, spend);
    const remainingValue = note.value - settled.amount;
    return {
      ...settled,
      remainingValue,
      ...(remainingValue > 0n ? { nextDeposit: changeNoteOf(note, settled.amount, changeSecrets) } : {}),
    };
  }

  /**
   * Relays the agent's proof of `quote` under the note's lease, once it proves exactly this spend (ProvenSpends.admit);
   * replays an identical earlier spend. A new withdrawal needs the quote unexpired and the chain to take the proof.
   */
  async spendProven(quote: SignedQuote, proof: WithdrawProof, spend: SpendTerms & { route: QuoteRoute }): Promise<ProvenSpendResult> {
    const { proofs, treasury } = this.deps;
    const proven = await proofs.admit(quote, proof, {
      route: spend.route,
      nullifierHash: quote.nullifierHash,
      recipient: spend.recipient,
      feeRecipient: treasury,
      feeBps: this.feeBpsOf(spend),
      withdrawnValue: spend.amount,
      tab: spend.tab,
      poolTransfer: spend.poolTransfer,
      authorizedNullifierHash: spend.authorizedNullifierHash,
    });
    // A retry presenting the terms of a settled spend is answered from it: "proof" keeps the two custodies' leases apart.
    const settled = await this.leased(proven, { ...spend, terms: [...spend.terms, "proof"] }, async () => proofs.assertUnexpired(quote));
    return { ...settled, changeCommitment: settled.lease.changeCommitment };
  }

  /**
   * `spend` under its lease, paying the tier's take to the treasury. Every route that moves pool funds comes through
   * here: a new spend must cover the relay (assertCoversRelay; an access fee, which takes no take, with its amount:
   * AccessFeeGate.assertCoversRelay) before anything is proven or relayed.
   */
  private async leased(spend: Spend, terms: SpendTerms, preflight?: () => Promise<void>): Promise<SettledSpend> {
    // Read while the withdrawal runs, not after it: the answer's privacy block waits for nothing (it never rejects).
    const anonymitySet = this.anonymitySet(terms.amount);
    const { authorizedNullifierHash } = terms;
    const { lease, replayed } = await this.deps.withdrawals.withdraw({
      preflight: async () => {
        await preflight?.();
        await (authorizedNullifierHash === undefined ? this.assertCoversRelay(terms.amount) : this.deps.accessFee.assertCoversRelay(terms.amount));
      },
      spend,
      amount: terms.amount,
      recipient: terms.recipient,
      feeRecipient: this.deps.treasury,
      feeBps: this.feeBpsOf(terms),
      terms: terms.terms,
      buildPayment: terms.buildPayment,
      ...(authorizedNullifierHash !== undefined && { authorizedNullifierHash }),
    });
    const custody: Custody = spend.kind === "note" ? "custodial" : "non-custodial";
    return {
      txHash: lease.fundingTxHash!,
      amount: lease.gross,
      fee: lease.fee,
      proofTimeMs: lease.proofTimeMs,
      privacy: privacyBlock(await anonymitySet, custody, lease.proofTimeMs ?? undefined),
      replayed,
      lease,
    };
  }

  /**
   * The gas of a relay in atomic USDC that a spend must pay for now: the fee floor while a take is charged (paid mode),
   * nothing on free-for-testing networks, where the operator pays relays knowingly.
   */
  async chargedRelayCost(): Promise<bigint> {
    const floor = await this.feeFloor();
    return floor.enforced ? floor.floor : 0n;
  }

  /** The fee floor at the pool's current state tree depth and the chain's current gas price. */
  async feeFloor(): Promise<FeeFloor> {
    const { chain, usdcPerEth } = this.deps;
    const [depth, feeData] = await Promise.all([chain.call(() => chain.pool.currentTreeDepth()), chain.call(() => chain.provider.getFeeData())]);
    const gasPriceWei = feeData.gasPrice ?? feeData.maxFeePerGas;
    if (gasPriceWei === null) throw new RelayerError("CHAIN_UNAVAILABLE", "The chain RPC did not answer a gas price; nothing was spent. Retry later.");
    const relayGas = relayGasAt(depth);
    const floor = gasCostInUsdc(relayGas, gasPriceWei, usdcPerEth);
    const enforced = this.takeBps > 0n;
    const forFloor = enforced ? smallestGrossForFee(floor, this.takeBps)! : 1n;
    const smallestGross = forFloor > this.minimumSettle ? forFloor : this.minimumSettle;
    return { depth, relayGas, gasPriceWei, usdcPerEth, floor, enforced, smallestGross };
  }

  /**
   * Refuses a withdrawal of `gross` below the minimum settle or, while a take is charged, one whose take would not
   * pay for its relay (the fee floor). Both name the floor and the smallest withdrawal that passes.
   */
  async assertCoversRelay(gross: bigint): Promise<void> {
    const floor = await this.feeFloor();
    const fee = feeOf(gross, this.takeBps);
    const belowFloor = floor.enforced && fee < floor.floor;
    if (gross >= this.minimumSettle && !belowFloor) return;
    const { chain, pricing, tier } = this.deps;
    const relayCost =
      `A relay at state tree depth ${floor.depth} uses up to ${floor.relayGas} gas; at ${floor.gasPriceWei} wei/gas and ` +
      `${formatUsdc(floor.usdcPerEth)} USDC/ETH the fee floor is ${floor.floor} atomic (${formatUsdc(floor.floor)} USDC)`;
    const smallest = `Withdraw at least ${floor.smallestGross} atomic (${formatUsdc(floor.smallestGross)} USDC); nothing was proven or spent.`;
    if (belowFloor && floor.smallestGross > this.minimumSettle) {
      throw new RelayerError(
        "BELOW_FEE_FLOOR",
        `A withdrawal of ${gross} atomic (${formatUsdc(gross)} USDC) pays a take of ${fee} atomic at ${this.takeBps} bps, below the fee floor. ` +
          `${relayCost}, which the take must cover on ${chain.network} (${pricing.pricingMode}). ${smallest}`,
      );
    }
    const who = floor.enforced ? "which the take must cover" : `paid by the operator (${pricing.pricingMode}: no take)`;
    throw new RelayerError(
      "BELOW_MINIMUM_SETTLE",
      `A withdrawal of ${gross} atomic (${formatUsdc(gross)} USDC) is below the ${tier} tier's minimum settle of ${this.minimumSettle} atomic ` +
        `(${formatUsdc(this.minimumSettle)} USDC) on ${chain.network}. ${relayCost}, ${who}. ${smallest}`,
    );
  }

  /**
   * Rejects invoices this facilitator cannot settle, with the math when the amount is the problem; and one the note
   * cannot cover, when the relayer knows its value.
   */
  checkInvoice({ amount, network }: Invoice, noteValue?: bigint): void {
    const { chain, pricing, tier } = this.deps;
    if (network !== undefined && network !== chain.network) {
      throw new RelayerError("INVALID_REQUEST", `This facilitator settles on ${chain.network}, not ${network}.`);
    }
    if (amount < this.minimumSettle) {
      const fee = feeOf(amount, this.takeBps);
      throw new RelayerError(
        "BELOW_MINIMUM_SETTLE",
        `maxAmountRequired ${amount} atomic (${formatUsdc(amount)} USDC) is below the ${tier} tier's minimum settle of ` +
          `${this.minimumSettle} atomic (${formatUsdc(this.minimumSettle)} USDC) on ${chain.network} (${pricing.pricingMode}). ` +
          `At ${this.takeBps} bps the take would be ${amount} * ${this.takeBps} / 10000 = ${fee} atomic, which does not cover a relay; ` +
          `settle at least ${this.minimumSettle} atomic.`,
      );
    }
    if (noteValue !== undefined && amount > noteValue) {
      throw new RelayerError("INVALID_PAYMENT_AMOUNT", `maxAmountRequired ${amount} exceeds the note's value ${noteValue}; use a note that covers it.`);
    }
  }
}

/**
 * What a spend of `note` leaves to record: the change note, when value remains, inherits the deposit's authorization,
 * bound to the note's label.
 */
export function spendRecordOf(note: Note, order: { amount: bigint; agentId?: string }, result: SpendResult): SpendRecord {
  return {
    nullifierHash: nullifierHashOf(note.nullifier),
    amount: order.amount,
    agentId: order.agentId,
    ...(result.nextDeposit !== undefined && { change: { nullifierHash: nullifierHashOf(result.nextDeposit.nullifier), label: note.label } }),
  };
}

import { changeNoteOf, deriveChangeSecrets, nullifierHashOf, type Note, type NoteSecrets } from "../sdk/index.js";
import type { IndexerClient } from "../indexer/client.js";
import type { AccessFeeGate } from "./access-fee.js";
import type { AgentRegistry } from "./agents/registry.js";
import type { PoolChain } from "./chain/pool-chain.js";
import { RelayerError } from "./errors.js";
import {
  feeOf,
  formatUsdc,
  gasCostInUsdc,
  minimumSettleFor,
  relayGasAt,
  smallestGrossForFee,
  takeBpsFor,
  type NetworkPricing,
  type TierName,
} from "./pricing.js";
import { privacyBlock, type PrivacyBlock } from "./privacy.js";
import type { LeasedWithdrawalOrder, LeasedWithdrawals } from "./settlement/leased-withdrawals.js";
import { spendableNote } from "./settlement/note-status.js";
import type { LeaseRecord } from "./store/relayer-store.js";

export interface FacilitatorDeps {
  chain: PoolChain;
  indexer: IndexerClient;
  withdrawals: LeasedWithdrawals;
  accessFee: AccessFeeGate;
  agents: AgentRegistry;
  pricing: NetworkPricing;
  tier: TierName;
  treasury: string;
  /** Atomic USDC per ETH: converts a relay's gas cost into the fee floor (RELAYER_USDC_PER_ETH). */
  usdcPerEth: bigint;
}

/** What a relay costs now, in atomic USDC: the least take a spend must pay while a take is charged. */
export interface FeeFloor {
  /** The pool's state tree depth, which the relay's insert hashes through. */
  depth: bigint;
  /** relayGasAt(depth): the most gas a relay at this depth uses. */
  relayGas: bigint;
  gasPriceWei: bigint;
  usdcPerEth: bigint;
  /** relayGas x gasPriceWei in atomic USDC, rounded up. */
  floor: bigint;
  /**
   * Whether a spend's take must reach the floor: when a take is charged (paid mode). On free-for-testing
   * networks the operator pays relays knowingly; the minimum settle still applies.
   */
  enforced: boolean;
  /** The smallest withdrawal (gross) the minimum settle and, when enforced, the floor let through. */
  smallestGross: bigint;
}

/** A payment out of a note: to whom, how much, and the optional agent it is made for. */
export interface PaymentOrder {
  note: Note;
  payTo: string;
  amount: bigint;
  /** CAIP-2 network the invoice names, when it names one. */
  network?: string;
  agentId?: string;
  category?: string;
}

export interface VerifyResult {
  valid: boolean;
  anonymitySet: number | null;
  reason?: string;
  message?: string;
}

/** A spend of a note, from its settled lease: what left the pool, the change note, and the privacy verdict. */
export interface SpendResult {
  txHash: string;
  /** What left the pool; the recipient got amount - fee. */
  amount: bigint;
  fee: bigint;
  remainingValue: bigint;
  /** The change note, present when value remains. */
  nextDeposit?: Note;
  /** Null when the settlement was recovered from the chain after the relayer that proved it died. */
  proofTimeMs: number | null;
  privacy: PrivacyBlock;
  /** Answered from an earlier identical request: nothing was withdrawn now. */
  replayed: boolean;
  lease: LeaseRecord;
}

/** What a spend asks of the leased withdrawals, besides the note. */
export interface SpendTerms {
  amount: bigint;
  recipient: string;
  /** The lease's route-specific terms (see LeasedWithdrawalOrder.terms). */
  terms: LeasedWithdrawalOrder["terms"];
  changeSecrets?: NoteSecrets;
  buildPayment?: LeasedWithdrawalOrder["buildPayment"];
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

  /** The anonymity set from the indexer, or null when it cannot be had (never a guess). */
  async anonymitySet(): Promise<number | null> {
    return this.deps.indexer.status().then(
      (status) => status.anonymitySet,
      () => null,
    );
  }

  /** docs/api.md 4.2: whether the note can pay the invoice now. Spends nothing; a "no" is data, with a reason. */
  async verify(order: PaymentOrder): Promise<VerifyResult> {
    const anonymitySet = await this.anonymitySet();
    try {
      this.checkInvoice(order);
      const nullifierHash = nullifierHashOf(order.note.nullifier);
      await this.deps.withdrawals.assertNotLeased(nullifierHash);
      await this.assertCoversRelay(order.amount);
      await spendableNote(order.note, this.deps.indexer, this.deps.chain);
      await this.deps.accessFee.assertAuthorized(nullifierHash);
      return { valid: true, anonymitySet };
    } catch (error) {
      if (!(error instanceof RelayerError) || error.status >= 500) throw error;
      return { valid: false, anonymitySet, reason: error.code.toLowerCase(), message: error.message };
    }
  }

  /** docs/api.md 4.3 (and 4.7, x402-pay): pays exactly `amount` out of the note to `payTo`, less the per-settle take. */
  async settle(order: PaymentOrder): Promise<SpendResult> {
    this.checkInvoice(order);
    if (order.agentId !== undefined) {
      await this.deps.agents.check({ agentId: order.agentId, provider: order.payTo, amount: order.amount, category: order.category });
    }
    const nullifierHash = nullifierHashOf(order.note.nullifier);
    await this.deps.accessFee.assertAuthorized(nullifierHash);
    const result = await this.spend(order.note, { amount: order.amount, recipient: order.payTo, terms: ["payment"] });
    await this.recordSpend(order, result);
    return result;
  }

  /** After a spend (not a replay): the change note keeps the deposit's authorization; the agent's spend counts. */
  async recordSpend(order: Pick<PaymentOrder, "note" | "agentId" | "amount">, result: SpendResult): Promise<void> {
    if (result.replayed) return;
    if (result.nextDeposit !== undefined) {
      await this.deps.accessFee.carryOver(nullifierHashOf(order.note.nullifier), nullifierHashOf(result.nextDeposit.nullifier));
    }
    if (order.agentId !== undefined) await this.deps.agents.recordSpend(order.agentId, order.amount);
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
    await this.deps.accessFee.assertAuthorized(nullifierHashOf(note.nullifier));
    const result = await this.spend(note, { amount, recipient, terms: ["withdraw"] });
    await this.recordSpend({ note, amount }, result);
    return result;
  }

  /**
   * Spends `note` under its lease, paying the tier's take to the treasury; replays an identical earlier spend.
   * Every route that moves pool funds comes through here: a new spend must cover the relay (assertCoversRelay)
   * before anything is proven.
   */
  async spend(note: Note, spend: SpendTerms): Promise<SpendResult> {
    const changeSecrets = spend.changeSecrets ?? deriveChangeSecrets(note);
    const { lease, replayed } = await this.deps.withdrawals.withdraw({
      preflight: () => this.assertCoversRelay(spend.amount),
      note,
      amount: spend.amount,
      recipient: spend.recipient,
      feeRecipient: this.deps.treasury,
      feeBps: this.takeBps,
      changeSecrets,
      terms: spend.terms,
      buildPayment: spend.buildPayment,
    });
    const remainingValue = note.value - lease.gross;
    return {
      txHash: lease.fundingTxHash!,
      amount: lease.gross,
      fee: lease.fee,
      remainingValue,
      ...(remainingValue > 0n ? { nextDeposit: changeNoteOf(note, lease.gross, changeSecrets) } : {}),
      proofTimeMs: lease.proofTimeMs,
      privacy: privacyBlock(await this.anonymitySet(), lease.proofTimeMs ?? undefined),
      replayed,
      lease,
    };
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

  /** Rejects invoices this facilitator cannot settle, with the math when the amount is the problem. */
  checkInvoice({ note, amount, network }: PaymentOrder): void {
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
    if (amount > note.value) {
      throw new RelayerError("INVALID_PAYMENT_AMOUNT", `maxAmountRequired ${amount} exceeds the note's value ${note.value}; use a note that covers it.`);
    }
  }
}

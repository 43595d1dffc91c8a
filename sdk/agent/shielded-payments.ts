import { encodeXPayment, offersShieldedProof, paymentHeaders, ShieldedRequirementSchema, type PaymentRequired, type ResourceInfo, type ShieldedRequirement } from "../x402/index.js";
import { DEFAULT_MAX_PAYMENT_WINDOW_SECONDS, DEFAULT_MAX_RELAY_FEE_ATOMIC } from "./agent-options.js";
import type { AgentWallet } from "./agent-wallet.js";
import { X402AgentError } from "./errors.js";
import type { NoteReservation } from "./note-reservation.js";
import { changeLanded, proveShieldedPayment, type ShieldedProof } from "./shielded-proof.js";

/** A shielded-proof payment the agent proved, and the note it holds for it until the seller's answer ends it. */
export interface ShieldedPayment extends ShieldedProof {
  held: NoteReservation;
  /** The payment's headers, as sent to the seller (and kept in the vault with the send). */
  headers: Record<string, string>;
}

/** What ending a sent shielded-proof payment needs: its note's reservation, its change note and its window. */
export type SentShieldedPayment = Pick<ShieldedPayment, "held" | "change" | "headers"> & { payment: { validBefore: bigint } };

/** How long after a refused shielded-proof payment's validBefore the agent looks whether it was relayed anyway. */
const REFUSED_PAYMENT_GRACE_SECONDS = 60;

/** setTimeout's longest delay (2^31 - 1 ms): a longer one fires at once. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * The pool pays the seller straight from the agent's proof (docs/sdk.md, "Shielded proof"): the agent proves the
 * payment out of a note it holds, hands it to the seller, and the seller's facilitator relays it when it settles. The
 * seller's answer ends the note's reservation: confirm (spent, change saved) or refuse (held until validBefore).
 */
export class ShieldedPayments {
  constructor(private readonly wallet: AgentWallet) {}

  /**
   * The seller's shielded-proof entry the agent can pay by its own proof: a v2 entry for its chain and USDC whose pool
   * and entrypoint are its facilitator's, when that facilitator relays proofs of this SDK's circuit and custody is not
   * "custodial" (the agent proves). Undefined when the 402 offers none: the detour.
   */
  async entryOf(required: PaymentRequired): Promise<ShieldedRequirement | undefined> {
    if (required.x402Version !== 2 || (this.wallet.options.custody ?? "auto") === "custodial") return undefined;
    const pool = await this.wallet.shieldedPool();
    if (pool === undefined) return undefined;
    for (const entry of required.accepts) {
      if (!offersShieldedProof(entry)) continue;
      const parsed = ShieldedRequirementSchema.safeParse(entry);
      if (!parsed.success) continue;
      const { network, asset, extra } = parsed.data;
      const ours =
        network === `eip155:${pool.chainId}` &&
        asset.toLowerCase() === pool.asset.toLowerCase() &&
        extra.entrypoint.toLowerCase() === pool.entrypoint.toLowerCase() &&
        extra.poolContracts.some((listed) => listed.toLowerCase() === pool.privacyPool.toLowerCase());
      if (ours) return parsed.data;
    }
    return undefined;
  }

  /**
   * Proves the payment of a shielded-proof entry out of a note it reserves, within every cap, the budget and the
   * privacy acknowledgement, the relay fee under maxRelayFeeAtomic. Returns with the reservation recorded as sending
   * (the caller hands the payment out); it ends with confirm or refuse. The proof alone moves nothing.
   */
  async prove(
    url: string,
    requirement: ShieldedRequirement,
    maxPaymentAtomic?: bigint,
    /** The request it pays and its resource: the payment is kept with the send, to be presented again after a crash. */
    presented?: { request: string; resource: ResourceInfo },
  ): Promise<ShieldedPayment> {
    const { wallet } = this;
    const { options } = wallet;
    const price = BigInt(requirement.amount);
    const fee = BigInt(requirement.extra.fee);
    wallet.emit({ step: "payment-required", url, x402Version: 2, amount: requirement.amount, payTo: requirement.payTo, network: requirement.network });
    wallet.checkPrice(url, price, maxPaymentAtomic);
    const maxFee = options.maxRelayFeeAtomic ?? DEFAULT_MAX_RELAY_FEE_ATOMIC;
    if (fee > maxFee) {
      throw new X402AgentError("PRICE_ABOVE_MAXIMUM", `${url}'s facilitator asks a relay fee of ${fee} atomic USDC, above maxRelayFeeAtomic ${maxFee}; nothing was paid. Raise maxRelayFeeAtomic to pay it.`);
    }
    const pool = (await wallet.shieldedPool())!;
    const gross = price + fee;
    const privacy = await wallet.checkPrivacy(url, gross);
    const chain = await wallet.ownChain(pool);
    const releaseBudget = wallet.reserve(gross);
    const held = await options.notes.reserve({ atLeast: gross }).catch((error: unknown) => {
      releaseBudget();
      throw error;
    });
    if (held === undefined) {
      releaseBudget();
      throw new X402AgentError("NO_NOTE", `No unspent note holds ${gross} atomic USDC (the price and the relay fee); deposit first.`);
    }
    try {
      const trees = await wallet.trees();
      const windowSeconds = options.maxPaymentWindowSeconds ?? DEFAULT_MAX_PAYMENT_WINDOW_SECONDS;
      const note = held.note;
      const proven = await proveShieldedPayment({ facilitator: options.facilitator, prover: wallet.prover, note, requirement, pool, trees, nowSeconds: nowSeconds(), windowSeconds, chain });
      wallet.keepTrees(trees);
      const { proofTimeMs, engine, payment, roots } = proven;
      const validBefore = Number(payment.validBefore);
      wallet.emit({ step: "proved-payment", proofTimeMs, engine, amount: requirement.amount, fee: fee.toString(), feeRecipient: payment.feeRecipient, validBefore, roots, ...privacy });
      const headers = paymentHeaders(encodeXPayment({ x402Version: 2, ...(presented !== undefined && { resource: presented.resource }), accepted: requirement, payload: proven.payload }));
      const untilMs = validBefore * 1000;
      await held.sending(presented === undefined ? { untilMs } : { untilMs, presentation: { request: presented.request, headers, withdrawnValue: proven.withdrawnValue } });
      return { ...proven, held, headers };
    } catch (error) {
      await held.released();
      releaseBudget();
      throw error;
    }
  }

  /** The seller took the payment: its facilitator had the pool pay it. The note is spent; its change joins the wallet. */
  async confirm(payment: SentShieldedPayment): Promise<void> {
    await payment.held.spent(payment.change.value > 0n ? payment.change : undefined);
  }

  /**
   * The seller refused the payment. Nothing moved unless its facilitator relays it before its validBefore, so the note
   * stays reserved until then; a minute after it, the agent looks for the payment's change note in its facilitator's
   * trees: there, the note was spent and the change joins the wallet; not there, the note is free again. (A process
   * that ends before leaves the note to NoteVault.reconcile, as any spend whose outcome was lost.) Returns what stops
   * the wait.
   */
  refuse(payment: SentShieldedPayment, onSettled: () => void = () => {}): () => void {
    const settleAt = (Number(payment.payment.validBefore) + REFUSED_PAYMENT_GRACE_SECONDS) * 1000;
    let timer: NodeJS.Timeout | undefined;
    // A window longer than one timer's reach waits in steps.
    const wait = () => {
      const left = settleAt - Date.now();
      if (left > 0) {
        timer = setTimeout(wait, Math.min(left, LONGEST_TIMER_MS));
        timer.unref();
        return;
      }
      onSettled();
      void this.settleRefused(payment);
    };
    wait();
    return () => clearTimeout(timer);
  }

  /** Whether the payment's change note is in the facilitator's trees now: the payment was relayed. False when unsure. */
  async landed(payment: SentShieldedPayment): Promise<boolean> {
    return changeLanded(this.wallet.options.facilitator, await this.wallet.trees(), payment.change).catch(() => false);
  }

  private async settleRefused(payment: SentShieldedPayment): Promise<void> {
    try {
      const landed = await changeLanded(this.wallet.options.facilitator, await this.wallet.trees(), payment.change);
      await (landed ? this.confirm(payment) : payment.held.released());
    } catch {
      // The facilitator could not tell: the note waits for NoteVault.reconcile, which asks the chain.
      await payment.held.unsettled().catch(() => undefined);
    }
  }
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

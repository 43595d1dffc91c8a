import type { SchemeServerHooks } from "@x402/core/types";
import { SettleError } from "@x402/core/types";
import { ShieldedPayloadSchema } from "../sdk/x402/shielded.js";
import type { ServeMetrics } from "./serve-metrics.js";
import type { ServedPayments } from "./served-payments.js";
import { SERVED_RETENTION_SECONDS } from "./served-payments.js";
import { settleUnavailable, verifyUnavailable } from "./outage-answers.js";
import { SHIELDED_REASONS } from "./shielded-reasons.js";

/** How long a request holds its payment while it is verified, handled and settled (a relay mined included). */
export const DEFAULT_SERVE_LEASE_SECONDS = 120;

type Aborted = { abort: true; reason: string; message: string };
type Hooks = Required<Pick<SchemeServerHooks, "onBeforeVerify" | "onAfterVerify" | "onVerifyFailure" | "onVerifiedPaymentCanceled" | "onSettleFailure" | "onAfterSettle">>;

/** What names a payment and its window; the rest of the payload is the facilitator's to check. */
const PaymentIdentitySchema = ShieldedPayloadSchema.pick({ nullifiers: true, validBefore: true }).loose();

/** The spent note's nullifier hash and window of a shielded-proof payload, or undefined when it does not read as one. */
function paymentOf(payload: unknown): { id: string; validBefore: number } | undefined {
  const parsed = PaymentIdentitySchema.safeParse(payload);
  if (!parsed.success) return undefined;
  return { id: BigInt(parsed.data.nullifiers[0]!).toString(), validBefore: Number(parsed.data.validBefore) };
}

/**
 * One answer per shielded-proof payment, across the seller's instances and restarts (ServedPayments): before the
 * facilitator verifies, the request takes the payment's lease (a payment served already is refused
 * `invalid_shielded_payment_already_used`, one being served elsewhere is answered `shielded_payment_in_progress`);
 * once the facilitator settled it, the payment is recorded served as the paid response leaves; on any other end
 * (refused, handler failed, settle failed) the lease is given back, so that the same payment presented again is
 * served. Outages are no refusals: the record or the facilitator unreachable is answered with a retryable reason.
 */
export class ServeOnce {
  /** The leases this process holds, by payment: its requests being verified, handled and settled. */
  private readonly leases = new Map<string, string>();

  constructor(
    private readonly served: ServedPayments,
    private readonly leaseSeconds: number = DEFAULT_SERVE_LEASE_SECONDS,
    private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000),
    private readonly metrics?: ServeMetrics,
  ) {}

  /** Takes the payment for this request, or why not. */
  async begin(payload: unknown): Promise<Aborted | undefined> {
    const aborted = await this.take(payload);
    if (aborted !== undefined) this.metrics?.notTaken.inc({ reason: aborted.reason });
    return aborted;
  }

  private async take(payload: unknown): Promise<Aborted | undefined> {
    const payment = paymentOf(payload);
    // The facilitator refuses a payload that does not read, with its reason.
    if (payment === undefined) return undefined;
    if (payment.validBefore + SERVED_RETENTION_SECONDS < this.nowSeconds()) {
      return { abort: true, reason: SHIELDED_REASONS.expired, message: "The payment's window closed more than the seller keeps a record of what it served: pay again." };
    }
    try {
      const start = await this.served.begin(payment.id, payment.validBefore, this.leaseSeconds);
      if (start.outcome === "served") return { abort: true, reason: SHIELDED_REASONS.alreadyUsed, message: "This payment was answered already: it pays one request." };
      if (start.outcome === "busy") {
        return { abort: true, reason: SHIELDED_REASONS.inProgress, message: `Another request is being served with this payment; present it again after ${start.untilSeconds} if it was not answered.` };
      }
      this.leases.set(payment.id, start.token);
      return undefined;
    } catch (error) {
      return { abort: true, reason: SHIELDED_REASONS.sellerUnavailable, message: `The seller cannot read its record of served payments (${(error as Error).message}); present the same payment again.` };
    }
  }

  /** The payment of this request was not served: its lease is given back (best effort: a lease also ends by itself). */
  async giveBack(payload: unknown): Promise<void> {
    const payment = paymentOf(payload);
    const token = payment === undefined ? undefined : this.leases.get(payment.id);
    if (token === undefined) return;
    this.leases.delete(payment!.id);
    await this.served.abandon(payment!.id, token).catch(() => undefined);
  }

  /** The facilitator settled the payment and its response leaves now: served, for good. */
  async finish(payload: unknown): Promise<void> {
    const payment = paymentOf(payload);
    if (payment === undefined || !this.leases.delete(payment.id)) return;
    // Once more on a failed write: a lease left unfinished would let the payment be served again once it ends.
    await this.served.finish(payment.id).catch(() => this.served.finish(payment.id));
    this.metrics?.served.inc();
  }

  /** The hooks of an x402 resource server's scheme, for the shielded-proof payments `isShielded` picks. */
  hooks(isShielded: (accepted: unknown) => boolean, inner: SchemeServerHooks | undefined, checkReference: Hooks["onBeforeVerify"]): Hooks {
    const shielded = (context: { paymentPayload: { accepted?: unknown } }) => isShielded(context.paymentPayload.accepted);
    return {
      onBeforeVerify: async (context) => {
        if (!shielded(context)) return inner?.onBeforeVerify?.(context);
        return (await checkReference(context)) ?? (await this.begin(context.paymentPayload.payload));
      },
      onAfterVerify: async (context) => {
        if (!shielded(context)) return inner?.onAfterVerify?.(context);
        if (!context.result.isValid) await this.giveBack(context.paymentPayload.payload);
        return undefined;
      },
      onVerifyFailure: async (context) => {
        if (!shielded(context)) return inner?.onVerifyFailure?.(context);
        await this.giveBack(context.paymentPayload.payload);
        return { recovered: true, result: verifyUnavailable(`it did not answer the verify: ${context.error.message}`) };
      },
      onVerifiedPaymentCanceled: async (context) => {
        if (!shielded(context)) return inner?.onVerifiedPaymentCanceled?.(context);
        await this.giveBack(context.paymentPayload.payload);
      },
      onSettleFailure: async (context) => {
        if (!shielded(context)) return inner?.onSettleFailure?.(context);
        await this.giveBack(context.paymentPayload.payload);
        // A facilitator's answer is its own reason; no answer at all is an outage, and says so.
        if (context.error instanceof SettleError) return undefined;
        return { recovered: true, result: settleUnavailable(context.requirements.network, `it did not answer the settle: ${context.error.message}`) };
      },
      onAfterSettle: async (context) => {
        if (!shielded(context)) return inner?.onAfterSettle?.(context);
        await this.finish(context.paymentPayload.payload);
      },
    };
  }
}

import type { SchemeServerHooks } from "@x402/core/types";
import { SettleError, VerifyError } from "@x402/core/types";
import { ShieldedPayloadSchema } from "../sdk/x402/shielded.js";
import type { ServeMetrics } from "./serve-metrics.js";
import type { ServedPayments } from "./served-payments.js";
import { SERVED_RETENTION_SECONDS } from "./served-payments.js";
import { settleUnavailable, verifyUnavailable } from "./outage-answers.js";
import { SHIELDED_REASONS } from "./shielded-reasons.js";

/** The longest a request keeps its payment's lease renewed: a handler slower than an hour is an exception. */
const MAX_HOLD_SECONDS = 3_600;

/** How often a served mark the record refused is written again. */
const RECORD_RETRY_MS = 1_000;

/** How long a request holds its payment while it is verified, handled and settled (a relay mined included). */
export const DEFAULT_SERVE_LEASE_SECONDS = 120;

type Aborted = { abort: true; reason: string; message: string };
type Hooks = Required<Pick<SchemeServerHooks, "onBeforeVerify" | "onAfterVerify" | "onVerifyFailure" | "onVerifiedPaymentCanceled" | "onBeforeSettle" | "onSettleFailure" | "onAfterSettle">>;

/** A lease this process holds: its token, and the timer that renews it while the request is handled. */
interface HeldLease {
  token: string;
  renewal: NodeJS.Timeout;
}

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
 * `invalid_shielded_payment_already_used`, one being served elsewhere is answered `shielded_payment_in_progress`),
 * and holds it, renewed every third of the lease, for as long as the request is handled; before the facilitator
 * settles, the request confirms it still holds it (a request whose lease another took over after it ended settles
 * nothing); once the facilitator settled it, the payment is recorded served as the paid response leaves; on any
 * other end (refused, handler failed, settle failed) the lease is given back, so that the same payment presented
 * again is served. Outages are no refusals: the record or the facilitator unreachable is answered with a retryable
 * reason. The lease only ends by itself when the process holding it died (or cannot reach the record).
 */
export class ServeOnce {
  /** The leases this process holds, by payment: its requests being verified, handled and settled. */
  private readonly leases = new Map<string, HeldLease>();

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
      this.hold(payment.id, start.token);
      return undefined;
    } catch (error) {
      return { abort: true, reason: SHIELDED_REASONS.sellerUnavailable, message: `The seller cannot read its record of served payments (${(error as Error).message}); present the same payment again.` };
    }
  }

  /**
   * Keeps the lease `token` of payment `id` for this request, renewed until the request ends, for MAX_HOLD_SECONDS
   * at most: a request the server never ended (its client gone, no hook called) does not hold the payment for ever,
   * and one that outlives it is still fenced by confirm.
   */
  private hold(id: string, token: string): void {
    const until = Date.now() + MAX_HOLD_SECONDS * 1000;
    const renewal = setInterval(() => {
      if (Date.now() > until) return clearInterval(renewal);
      // A renewal the record refuses means the lease is no longer this request's: confirm tells it before settling.
      // One the record cannot answer is tried again at the next tick.
      this.served.renew(id, token, this.leaseSeconds).catch(() => undefined);
    }, (this.leaseSeconds * 1000) / 3);
    renewal.unref();
    this.leases.set(id, { token, renewal });
  }

  /** The lease this request holds on `payload`'s payment, no longer renewed. */
  private release(payload: unknown): { id: string; token: string } | undefined {
    const payment = paymentOf(payload);
    const held = payment === undefined ? undefined : this.leases.get(payment.id);
    if (held === undefined) return undefined;
    clearInterval(held.renewal);
    this.leases.delete(payment!.id);
    return { id: payment!.id, token: held.token };
  }

  /**
   * Before the facilitator settles: whether this request still holds its payment's lease (renewing it for the
   * settle), or why it must not settle. A lease taken over after it ended (the record out of reach for longer than
   * the lease) belongs to another request now, which serves the payment.
   */
  async confirm(payload: unknown): Promise<Aborted | undefined> {
    const payment = paymentOf(payload);
    const held = payment === undefined ? undefined : this.leases.get(payment.id);
    if (held === undefined) return undefined;
    let holds: boolean;
    try {
      holds = await this.served.renew(payment!.id, held.token, this.leaseSeconds);
    } catch (error) {
      await this.giveBack(payload);
      return { abort: true, reason: SHIELDED_REASONS.sellerUnavailable, message: `The seller cannot read its record of served payments (${(error as Error).message}); present the same payment again.` };
    }
    if (holds) return undefined;
    this.release(payload);
    this.metrics?.notTaken.inc({ reason: SHIELDED_REASONS.inProgress });
    return { abort: true, reason: SHIELDED_REASONS.inProgress, message: "Another request took over this payment while this one was handled; it is served there. Present it again if that request was not answered." };
  }

  /** The payment of this request was not served: its lease is given back (best effort: a lease also ends by itself). */
  async giveBack(payload: unknown): Promise<void> {
    const held = this.release(payload);
    if (held === undefined) return;
    await this.served.abandon(held.id, held.token).catch(() => undefined);
  }

  /**
   * The facilitator settled the payment and its response leaves now: served, for good. A record that refuses the
   * write twice does not hold the response back: the write is tried again every second, the lease still renewed, until
   * it lands (a lease left to end would let the payment be served again).
   */
  async finish(payload: unknown): Promise<void> {
    const payment = paymentOf(payload);
    if (payment === undefined || !this.leases.has(payment.id)) return;
    this.metrics?.served.inc();
    const write = () => this.served.finish(payment.id);
    const written = await write()
      .catch(write)
      .then(
        () => true,
        () => false,
      );
    if (written) {
      this.release(payload);
      return;
    }
    // As long as the lease is renewed, no longer: a record out of reach for an hour is an outage of its own.
    const until = Date.now() + MAX_HOLD_SECONDS * 1000;
    const retry = setInterval(() => {
      if (Date.now() > until) return clearInterval(retry);
      void write().then(() => {
        clearInterval(retry);
        this.release(payload);
      }, () => undefined);
    }, RECORD_RETRY_MS);
    retry.unref();
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
      // A facilitator that gave no answer is an outage, a plain payment's too: a retryable reason, not a bare 402.
      onVerifyFailure: async (context) => {
        if (shielded(context)) {
          await this.giveBack(context.paymentPayload.payload);
        } else {
          const recovered = await inner?.onVerifyFailure?.(context);
          if (recovered !== undefined || context.error instanceof VerifyError) return recovered;
        }
        return { recovered: true, result: verifyUnavailable(`it did not answer the verify: ${context.error.message}`) };
      },
      onVerifiedPaymentCanceled: async (context) => {
        if (!shielded(context)) return inner?.onVerifiedPaymentCanceled?.(context);
        await this.giveBack(context.paymentPayload.payload);
      },
      onBeforeSettle: async (context) => {
        if (!shielded(context)) return inner?.onBeforeSettle?.(context);
        return this.confirm(context.paymentPayload.payload);
      },
      onSettleFailure: async (context) => {
        if (shielded(context)) {
          await this.giveBack(context.paymentPayload.payload);
        } else {
          const recovered = await inner?.onSettleFailure?.(context);
          if (recovered !== undefined) return recovered;
        }
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

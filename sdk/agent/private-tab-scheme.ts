import type { PaymentResponseContext, x402Client } from "@x402/core/client";
import type { PaymentPayloadContext, PaymentPayloadResult, PaymentRequirements, SchemeClientHooks, SchemeNetworkClient } from "@x402/core/types";
import { BatchSettlementRequirementSchema } from "../x402/batch-settlement.js";
import { caip2NetworkOf } from "../x402/index.js";
import { X402AgentError } from "./errors.js";
import { facilitatorUsdc } from "./private-pool-scheme.js";
import type { TabOptions, TabPayment } from "./private-tab.js";
import { tabAnswerOf } from "./tab-answers.js";
import type { X402AgentOptions } from "./agent-options.js";
import { AgentWallet } from "./agent-wallet.js";
import { TabPayments } from "./tab-payments.js";

/** What the scheme pays with: an X402Agent's options, its `tabs` among them. */
export type PrivateTabSchemeOptions = Omit<X402AgentOptions, "probe" | "tabs"> & { tabs: TabOptions };

/** The voucher a tab's payload carries; a tab's payments are told apart by their channel and cumulative total. */
type VoucherOf = { voucher?: { channelId?: unknown; maxClaimableAmount?: unknown } };

/**
 * The `batch-settlement` scheme of an @x402/core client (`x402Client.register(network, scheme)`) that pays through the
 * agent's private tabs (docs/sdk.md, "Private tab"), with the module X402Agent.fetch pays tabs with (TabPayments),
 * over a wallet of its own: the first request to a seller opens a tab by one proof and carries its deposit; every
 * later one is a voucher of the tab's own key. The seller's answer comes back through the payment-response hook, which
 * moves the tab's running total.
 *
 * The client sends requests as it is given them: a tab takes one at a time (the seller refuses a second while one is
 * pending), so requests to one seller through this scheme must not overlap. X402Agent.fetch queues them itself.
 */
export class PrivateTabScheme implements SchemeNetworkClient {
  readonly scheme = "batch-settlement";
  readonly network: X402AgentOptions["network"];
  readonly findDefaultAsset: ReturnType<typeof facilitatorUsdc>;
  private readonly tabs: TabPayments;
  /** The URL of the 402 each selected entry came from, handed over by the client's before-creation hook. */
  private readonly urlOf = new WeakMap<object, string>();
  /** Payments made and not answered, by channel and cumulative total. */
  private readonly pending = new Map<string, { url: string; payment: TabPayment }>();

  readonly schemeHooks: SchemeClientHooks = {
    onBeforePaymentCreation: async ({ paymentRequired, selectedRequirements }) => {
      this.urlOf.set(selectedRequirements, paymentRequired.resource.url);
    },
    onPaymentResponse: (context) => this.onPaymentResponse(context),
  };

  constructor(options: PrivateTabSchemeOptions) {
    this.network = options.network;
    this.findDefaultAsset = facilitatorUsdc(options.network);
    this.tabs = new TabPayments(new AgentWallet(options), options.tabs);
  }

  async createPaymentPayload(x402Version: number, requirements: PaymentRequirements, context?: PaymentPayloadContext): Promise<PaymentPayloadResult> {
    const url = this.urlOf.get(requirements) ?? `the seller paid at ${requirements.payTo}`;
    const parsed = BatchSettlementRequirementSchema.safeParse(requirements);
    if (x402Version !== 2 || !parsed.success) {
      throw new X402AgentError("NO_USABLE_ENTRY", `${url}: not an x402 v2 batch-settlement entry a private tab can pay. Nothing was paid.`);
    }
    const cap = context?.maxAmountPerPayment;
    const payment = await this.tabs.prepare(url, parsed.data, cap === undefined ? undefined : BigInt(cap));
    this.pending.set(pendingKey(payment.payload as VoucherOf), { url, payment });
    return { x402Version: 2, payload: { ...payment.payload } };
  }

  /**
   * The seller's answer to a payment of this scheme: its running total moves; or the tab recovers from an earlier
   * payment's lost answer (TabPayment.recover) and the client pays the request again, once; or TAB_PAYMENT_REFUSED
   * (TAB_SELLER_UNAVAILABLE for an outage) is thrown.
   */
  private async onPaymentResponse({ paymentPayload, settleResponse, paymentRequired }: PaymentResponseContext): Promise<void | { recovered: true }> {
    const key = pendingKey(paymentPayload.payload as VoucherOf);
    const pending = this.pending.get(key);
    if (pending === undefined) return;
    this.pending.delete(key);
    const ok = settleResponse?.success === true;
    const answer = tabAnswerOf({ ok, settle: settleResponse, required: paymentRequired });
    if (!ok && (await pending.payment.recover(answer))) return { recovered: true };
    await pending.payment.answered(answer);
    if (!ok && (settleResponse !== undefined || paymentRequired !== undefined)) throw pending.payment.refusal(pending.url, 402, answer.reason);
  }
}

/** Registers `scheme` on `client` for its chain (eip155:<chainId>; tabs are x402 v2 only). Returns the client. */
export function registerPrivateTabScheme(client: x402Client, scheme: PrivateTabScheme): x402Client {
  return client.register(caip2NetworkOf(scheme.network.chainId), scheme);
}

function pendingKey({ voucher }: VoucherOf): string {
  return `${String(voucher?.channelId).toLowerCase()}:${String(voucher?.maxClaimableAmount)}`;
}

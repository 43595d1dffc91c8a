import type { SettleAnswer, SettleProofAnswer } from "../client/facilitator-client.js";
import { changeNoteOf } from "../note/note.js";
import {
  buildProbePayment,
  classifyProbeResponse,
  encodeXPayment,
  isRetryableShieldedReason,
  parsePaymentRequired,
  paymentHeaders,
  readPaymentRequired,
  settlementErrorOf,
  type ExactRequirement,
  type PaymentRequired,
  type ResourceInfo,
  type ShieldedRequirement,
} from "../x402/index.js";
import type { BatchSettlementRequirement } from "../x402/batch-settlement.js";
import { DEFAULT_PRESENT_AGAIN_FOR_MS, type RequirementPayment, type X402AgentOptions } from "./agent-options.js";
import { AgentWallet } from "./agent-wallet.js";
import { X402AgentError } from "./errors.js";
import { ShieldedPaymentRefusedError, unaccepted, type UnacceptedPayment, type X402Settlement } from "./payment-refusals.js";
import { PoolExactPayments } from "./pool-exact-payments.js";
import type { TabPayment } from "./private-tab.js";
import { fetchSameOrigin } from "./same-origin-fetch.js";
import { ShieldedPayments, type SentShieldedPayment, type ShieldedPayment } from "./shielded-payments.js";
import { TabPayments } from "./tab-payments.js";

export * from "./agent-options.js";
export { X402AgentError, type X402AgentErrorCode } from "./errors.js";
export { PaymentNotAcceptedError, paymentNotAccepted, ShieldedPaymentRefusedError, type UnacceptedPayment, type X402Settlement } from "./payment-refusals.js";
export type { SentShieldedPayment, ShieldedPayment } from "./shielded-payments.js";

/** The pause before the n-th presentation again of a payment: 0.5 s doubling, at most 8 s. */
const presentAgainDelayMs = (attempt: number) => Math.min(8_000, 500 * 2 ** attempt);

/** A shielded-proof payment the seller has not answered yet, presented again before any new one for its request. */
interface UnansweredPayment {
  sent: SentShieldedPayment;
  /** Stops the wait that frees or spends the note after the payment's window (refuseShielded). */
  stopHold: () => void;
}

/**
 * An x402 buyer that pays out of the privacy pool: `fetch` a paid URL, and on a 402 it pays by the way the seller's
 * entries allow (a private tab, a shielded proof, else the facilitator's detour) and retries the seller with the
 * payment (docs/api.md 1, "Flow of an x402 payment"). Each way to pay is a module over one AgentWallet
 * (docs/sdk.md, "How the agent is built"); this class adds what a fetch needs around them: same-origin redirects,
 * the probe, and presenting a shielded-proof payment again through the seller's outage.
 */
export class X402Agent {
  private readonly wallet: AgentWallet;
  private readonly exact: PoolExactPayments;
  private readonly shielded: ShieldedPayments;
  /** The agent's private tabs, when `tabs` is set. */
  private readonly tabs?: TabPayments;
  /** Shielded-proof payments sent and not answered (an outage), by request (method and URL). */
  private readonly unanswered = new Map<string, UnansweredPayment>();

  constructor(private readonly options: X402AgentOptions) {
    this.wallet = new AgentWallet(options);
    this.exact = new PoolExactPayments(this.wallet);
    this.shielded = new ShieldedPayments(this.wallet);
    if (options.tabs !== undefined) this.tabs = new TabPayments(this.wallet, options.tabs);
  }

  /** What counts against budgetAtomic now: settled payments, take included, and those in flight. */
  get committedAtomic(): bigint {
    return this.wallet.committedAtomic;
  }

  /**
   * Fetches `url`; a 402 from an x402 seller is paid privately and the request repeated with the payment. Throws
   * PaymentNotAcceptedError when the seller does not answer the paid request with 2xx. `maxPaymentAtomic` caps this
   * payment below the agent's own cap. Redirects are followed within the origin of `url` only (fetchSameOrigin): one
   * to another origin is refused with CROSS_ORIGIN_REDIRECT, nothing paid.
   */
  async fetch(url: string, init: RequestInit = {}, { maxPaymentAtomic }: { maxPaymentAtomic?: bigint } = {}): Promise<Response> {
    const first = await fetchSameOrigin(url, init);
    if (first.status !== 402) return first;
    const required = await readPaymentRequired(first);
    if (required === undefined) throw new X402AgentError("NOT_X402", `${url} answered 402 without x402 payment details; nothing was paid.`);
    const tabEntry = this.tabEntryOf(required);
    if (tabEntry !== undefined && required.x402Version === 2) return this.payOnTab(url, init, tabEntry, required.resource, maxPaymentAtomic);
    const shielded = await this.shieldedEntryOf(required);
    if (shielded !== undefined && required.x402Version === 2) return this.payShielded(url, init, shielded, required.resource, maxPaymentAtomic);
    const accepted = this.usableEntry(required, url);
    const resource = required.x402Version === 2 ? required.resource : undefined;
    const preflight = (this.options.probe ?? true) ? () => this.probe(url, init, accepted, resource) : undefined;
    const answer = await this.payRequirement(accepted, { url, resource, maxPaymentAtomic, preflight });
    const response = await this.retryPaid(url, init, paymentHeaders(answer.xPayment));
    if (!response.ok) throw await unaccepted(url, response, answer);
    return response;
  }

  /** Pays a seller's exact entry out of the pool through settle-x402 (PoolExactPayments.payRequirement). */
  payRequirement(accepted: ExactRequirement, payment: RequirementPayment): Promise<X402Settlement> {
    return this.exact.payRequirement(accepted, payment);
  }

  /** The seller's exact entry in the facilitator's USDC on its chain; NO_USABLE_ENTRY when `required` offers none. */
  usableEntry(required: PaymentRequired, url: string): ExactRequirement {
    return this.exact.usableEntry(required, url);
  }

  /**
   * The generic path (docs/api.md 4.3): settles `maxAmountRequired` to `payTo` through the facilitator, then repeats the
   * request with `X-Service-Settlement: <txHash>` for a seller that checks the settlement on chain. The take is
   * inside the amount here: the seller receives it less the take.
   */
  async fetchWithSettlement(url: string, init: RequestInit, invoice: { payTo: string; maxAmountRequired: string }): Promise<Response> {
    const answer: SettleAnswer | SettleProofAnswer = await this.exact.settleInvoice(url, invoice);
    return this.retryPaid(url, init, { "X-Service-Settlement": answer.txHash });
  }

  /** The seller's `batch-settlement` entry the agent opens a tab on, when the agent pays by tab and the 402 offers one. */
  tabEntryOf(required: PaymentRequired): BatchSettlementRequirement | undefined {
    return this.tabs?.entryOf(required);
  }

  /** Pays the request on the agent's tab with the seller (docs/sdk.md, "Private tab"). */
  async payOnTab(url: string, init: RequestInit, accepted: BatchSettlementRequirement, resource: ResourceInfo, maxPaymentAtomic?: bigint): Promise<Response> {
    const response = await this.tabsOrRefuse().pay(url, init, accepted, resource, maxPaymentAtomic);
    this.wallet.emit({ step: "paid", url, status: response.status });
    return response;
  }

  /** The payment of one request on the agent's tab, for a client that sends it itself: the same caps as payOnTab. */
  async prepareTabPayment(url: string, accepted: BatchSettlementRequirement, maxPaymentAtomic?: bigint): Promise<TabPayment> {
    return this.tabsOrRefuse().prepare(url, accepted, maxPaymentAtomic);
  }

  /** The seller's shielded-proof entry the agent can pay by its own proof (ShieldedPayments.entryOf). */
  shieldedEntryOf(required: PaymentRequired): Promise<ShieldedRequirement | undefined> {
    return this.shielded.entryOf(required);
  }

  /**
   * Pays a shielded-proof entry (docs/sdk.md, "Shielded proof"): the agent proves the payment out of the smallest note
   * that holds price plus fee and sends it to the seller, whose facilitator relays it when it settles: the pool pays
   * payTo in that one transaction, and nothing moves before. The spent note is marked and its change saved once the
   * seller answers 2xx; a refusal holds the note until the payment's validBefore (ShieldedPaymentRefusedError).
   */
  async payShielded(url: string, init: RequestInit, requirement: ShieldedRequirement, resource: ResourceInfo, maxPaymentAtomic?: bigint): Promise<Response> {
    const request = requestKey(url, init);
    const sent = (await this.unansweredPayment(request)) ?? (await this.shielded.prove(url, requirement, maxPaymentAtomic, { request, resource }));
    const answer = await this.presentShielded(url, init, sent.headers);
    if ("response" in answer) {
      await this.shielded.confirm(sent);
      return answer.response;
    }
    const refused = new ShieldedPaymentRefusedError(url, answer.seller, Number(sent.payment.validBefore), answer.retryable);
    // A refusal read against the chain: a payment the seller refuses as answered already (to a process of this
    // agent that died) was paid, and its change note is in the trees.
    if (!answer.retryable && (await this.shielded.landed(sent))) {
      await this.shielded.confirm(sent);
      throw refused;
    }
    const stopHold = this.shielded.refuse(sent, () => this.unanswered.delete(request));
    if (answer.retryable) this.unanswered.set(request, { sent, stopHold });
    throw refused;
  }

  /** Proves a shielded-proof payment for a client that sends it itself (ShieldedPayments.prove). */
  proveShieldedRequirement(url: string, requirement: ShieldedRequirement, maxPaymentAtomic?: bigint): Promise<ShieldedPayment> {
    return this.shielded.prove(url, requirement, maxPaymentAtomic);
  }

  /** The seller took a shielded-proof payment (ShieldedPayments.confirm). */
  confirmShielded(payment: SentShieldedPayment): Promise<void> {
    return this.shielded.confirm(payment);
  }

  /** The seller refused a shielded-proof payment (ShieldedPayments.refuse): returns what stops the wait. */
  refuseShielded(payment: SentShieldedPayment, onSettled?: () => void): () => void {
    return this.shielded.refuse(payment, onSettled);
  }

  private tabsOrRefuse(): TabPayments {
    if (this.tabs === undefined) throw new TypeError("X402Agent: private tabs need the `tabs` option");
    return this.tabs;
  }

  /**
   * The payment sent for `request` and not answered, which is presented again before any other note is spent for
   * it: one of this process's (an outage), or one the vault kept from a process that ended before the answer.
   */
  private async unansweredPayment(request: string): Promise<SentShieldedPayment | undefined> {
    const unanswered = this.unanswered.get(request);
    if (unanswered !== undefined) {
      this.unanswered.delete(request);
      unanswered.stopHold();
      return unanswered.sent;
    }
    const resumed = await this.options.notes.resume?.(request);
    if (resumed === undefined) return undefined;
    const { reservation, presentation, holdUntilMs } = resumed;
    // A payment of an earlier process: what it may still take counts against this one's budget.
    this.wallet.count(presentation.withdrawnValue);
    return {
      held: reservation,
      change: changeNoteOf(reservation.note, presentation.withdrawnValue),
      headers: presentation.headers,
      payment: { validBefore: BigInt(Math.floor(holdUntilMs / 1000)) },
    };
  }

  /**
   * Presents one shielded-proof payment until the seller answers it or refuses it. An outage (no answer, a 5xx, or a
   * 402 naming a retryable reason: the facilitator or the seller's record unreachable, the payment busy elsewhere)
   * is no refusal: the same payment is presented again, for presentAgainForMs, never another note for this request.
   */
  private async presentShielded(url: string, init: RequestInit, headers: Record<string, string>): Promise<{ response: Response } | { seller: UnacceptedPayment["seller"]; retryable: boolean }> {
    const deadline = Date.now() + (this.options.presentAgainForMs ?? DEFAULT_PRESENT_AGAIN_FOR_MS);
    for (let attempt = 0; ; attempt++) {
      let seller: UnacceptedPayment["seller"];
      try {
        const response = await this.retryPaid(url, init, headers);
        if (response.ok) return { response };
        const body = await response.text();
        const reason = settlementErrorOf(response.headers) ?? parsePaymentRequired(response.headers, body)?.error;
        seller = { status: response.status, body, ...(reason !== undefined && { reason }) };
      } catch (error) {
        if (error instanceof X402AgentError) throw error;
        seller = { status: 0, body: "", reason: `no answer: ${(error as Error).message}` };
      }
      const retryable = seller.status === 0 || seller.status >= 500 || isRetryableShieldedReason(seller.reason);
      const delay = presentAgainDelayMs(attempt);
      if (!retryable || Date.now() + delay > deadline) return { seller, retryable };
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** docs/api.md 1, step 1: an invalid payment the seller must reject with a verification error, before any note moves. */
  private async probe(url: string, init: RequestInit, accepted: ExactRequirement, resource?: ResourceInfo): Promise<void> {
    const response = await fetchSameOrigin(url, withHeaders(init, paymentHeaders(encodeXPayment(await buildProbePayment(accepted, resource)))));
    const verdict = await classifyProbeResponse(response);
    this.wallet.emit({ step: "probe", verdict, status: response.status });
    if (verdict === "incompatible") {
      throw new X402AgentError("SELLER_INCOMPATIBLE", `${url} did not verify a probe payment as x402 sellers do; no note was touched.`);
    }
  }

  private async retryPaid(url: string, init: RequestInit, headers: Record<string, string>): Promise<Response> {
    const response = await fetchSameOrigin(url, withHeaders(init, headers));
    this.wallet.emit({ step: "paid", url, status: response.status });
    return response;
  }
}

/** A request as the agent pays it: its method and URL. */
function requestKey(url: string, init: RequestInit): string {
  return `${(init.method ?? "GET").toUpperCase()} ${url}`;
}

function withHeaders(init: RequestInit, headers: Record<string, string>): RequestInit {
  const merged = new Headers(init.headers);
  for (const [name, value] of Object.entries(headers)) merged.set(name, value);
  return { ...init, headers: merged };
}

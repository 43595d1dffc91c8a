import { setTimeout as sleep } from "node:timers/promises";
import { verificationKeySha256 } from "../circuit/artifacts.js";
import {
  FacilitatorError,
  noteFromWire,
  noteToWire,
  type AccessFeeProofAnswer,
  type FacilitatorClient,
  type OpenTabAnswer,
  type QuoteAnswer,
  type SettleAnswer,
  type SettleProofAnswer,
  type SettleX402Answer,
  type SettleX402ProofAnswer,
  type SupportedAnswer,
  type WireNote,
} from "../client/facilitator-client.js";
import { grossForNet } from "../fees/relay-fee.js";
import { changeNoteOf, deriveChangeSecrets, nullifierHashOf, type Note } from "../note/note.js";
import { sharedProver, type EngineName, type ProofEngine } from "../prover/local-prover.js";
import {
  amountOf,
  buildProbePayment,
  classifyProbeResponse,
  encodeXPayment,
  parsePaymentRequired,
  paymentHeaders,
  paymentResponseHeaderOf,
  readPaymentRequired,
  selectExactRequirement,
  settlementErrorOf,
  whyNoExactRequirement,
  x402VersionOf,
  ShieldedRequirementSchema,
  offersShieldedProof,
  isRetryableShieldedReason,
  type ExactRequirement,
  type PaymentRequired,
  type ProbeVerdict,
  type ResourceInfo,
  type ShieldedRequirement,
} from "../x402/index.js";
import { BatchSettlementRequirementSchema, type BatchSettlementRequirement } from "../x402/batch-settlement.js";
import { X402AgentError } from "./errors.js";
import { ChainRootsReader, type OwnRpc, type RootsSource } from "./chain-roots.js";
import { proveLocally, type QuoteExpectation } from "./local-proof.js";
import type { NoteReservation, NoteStore, SendingHold, StoredPresentation } from "./note-reservation.js";
import { PrivateTabs, tabTermsProblem, type OpenTab, type TabOptions, type TabPayment } from "./private-tab.js";
import type { TabStore } from "./tab-record.js";
import { fetchSameOrigin } from "./same-origin-fetch.js";
import { changeLanded, proveShieldedPayment, type AgentPool, type ShieldedProof } from "./shielded-proof.js";
import { emptyTrees, loadTrees, saveTrees, type AgentTrees } from "./tree-file.js";

export { X402AgentError, type X402AgentErrorCode } from "./errors.js";

/** What the agent knows of a funded payment the seller did not accept. */
export interface UnacceptedPayment {
  url: string;
  /** The seller's answer to the paid request. */
  seller: {
    status: number;
    /** Its body, when the client read it (X402Agent.fetch does; an @x402/core client's payment-response hook sees headers only). */
    body?: string;
    /**
     * Why, in x402's words: the payment response's errorReason when the seller's facilitator failed to settle (e.g.
     * "invalid_exact_evm_transaction_failed"), else the error its 402 gave (e.g. "invalid_exact_evm_signature").
     */
    reason?: string;
    /** Its PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1) header, when it sent one. */
    paymentResponse?: string;
  };
  /** The single-use payer the pool funded; it holds `amount` until the seller's facilitator moves it. */
  payer: string;
  /** The seller's price, which the payer holds. */
  amount: string;
  /** What left the note: amount plus the take. */
  gross: string;
  fundingTxHash: string;
  /** The authorization's validBefore (unix seconds): the seller cannot use it from then on. */
  validBefore: number;
  /** When and how the payer's balance comes back. */
  refund: string;
}

/**
 * The pool funded the payer but the seller did not answer the paid request with 2xx. The change note is saved; the
 * seller's price sits at the single-use payer. After the authorization's validBefore the operator's payer sweep
 * returns exactly that payout into the pool as the refund note the proof committed to (the spent note's label and
 * refund secrets), which recoverNotes finds from the seed alone (docs/sdk.md, "When a seller refuses").
 */
export class PaymentNotAcceptedError extends X402AgentError {
  constructor(readonly payment: UnacceptedPayment) {
    super(
      "PAYMENT_NOT_ACCEPTED",
      `${payment.url} answered the paid request with ${payment.seller.status}${payment.seller.reason === undefined ? "" : ` (${payment.seller.reason})`}. ` +
        `The pool had funded the payer ${payment.payer} with ${payment.amount} atomic USDC (${payment.gross} left the note). ${payment.refund}`,
    );
    this.name = "PaymentNotAcceptedError";
  }
}

/**
 * The seller did not answer a shielded-proof payment with 2xx. Nothing moved when its facilitator did not settle; but
 * the payment binds the note until its validBefore (a facilitator could still relay it until then, paying exactly the
 * seller's terms), so the agent does not spend that note elsewhere before then.
 */
export class ShieldedPaymentRefusedError extends X402AgentError {
  constructor(
    readonly url: string,
    readonly seller: UnacceptedPayment["seller"],
    /** Unix seconds: from then on the pool refuses the payment, and the note is free for another. */
    readonly validBefore: number,
    /**
     * The seller answered an outage, or that the payment was busy, until the agent stopped presenting it: not a
     * refusal. Fetching the same URL again presents the same payment first (this process), never a new one.
     */
    readonly retryable = false,
  ) {
    super(
      "SHIELDED_PAYMENT_REFUSED",
      `${url} answered the shielded-proof payment with ${seller.status}${seller.reason === undefined ? "" : ` (${seller.reason})`}` +
        (retryable ? ", an outage rather than a refusal: fetch it again to present the same payment. " : ". ") +
        `Nothing moved unless its facilitator relays the payment before ${new Date(validBefore * 1000).toISOString()} (validBefore ${validBefore}), which would pay exactly its price; ` +
        "the agent holds the note until then.",
    );
    this.name = "ShieldedPaymentRefusedError";
  }
}

/** Every answer a settlement can have: custodial (the facilitator proved) or non-custodial (the agent did). */
export type SettlementAnswer = SettleX402Answer | SettleAnswer | SettleX402ProofAnswer | SettleProofAnswer | OpenTabAnswer;

/** What the agent does, step by step (the demo prints these). Holds no note secret. */
export type AgentEvent =
  | { step: "payment-required"; url: string; x402Version: 1 | 2; amount: string; payTo: string; network: string }
  | { step: "probe"; verdict: ProbeVerdict; status: number }
  /**
   * Non-custodial: the agent proved the spend itself, against the facilitator's quote; where its roots were checked,
   * and this payment's own anonymity set (none for an access fee, which pays the facilitator).
   */
  | ({ step: "proved"; proofTimeMs: number; engine: EngineName; quote: QuoteAnswer; roots: RootsSource } & Partial<PaymentPrivacy>)
  /** Shielded proof: the agent proved the seller's payment itself; its facilitator relays it when the seller settles. */
  | ({
      step: "proved-payment";
      proofTimeMs: number;
      engine: EngineName;
      amount: string;
      fee: string;
      feeRecipient: string;
      validBefore: number;
      roots: RootsSource;
    } & PaymentPrivacy)
  /** The facilitator asked for its access fee: the agent paid it out of the note, authorizing the change note it pays from next. */
  | { step: "access-fee-paid"; answer: AccessFeeProofAnswer }
  | { step: "settled"; answer: SettlementAnswer }
  | { step: "paid"; url: string; status: number };

/** What a settle-x402 answers, whoever proved: the payment for the seller (xPayment) and what it cost. */
export type X402Settlement = SettleX402Answer | SettleX402ProofAnswer;

/** Whether one payment is private: its own anonymity set, and whether that reaches the privacy minimum. */
export interface PaymentPrivacy {
  private: boolean;
  anonymitySet: number | null;
}

/** One payment of a seller's entry out of the pool, whichever client asked for it (fetch, or an @x402/core scheme). */
export interface RequirementPayment {
  /** The paid request, named in errors and events: its URL, or what the caller knows of the seller. */
  url: string;
  /** The v2 402's `resource`, carried back in the payment; v1 has none. */
  resource?: ResourceInfo;
  /** A cap on this payment below the agent's maxPaymentAtomic (e.g. a price the agent's owner confirmed). */
  maxPaymentAtomic?: bigint;
  /** Runs once the price is within the caps and before any note moves (fetch probes the seller here); throwing refuses. */
  preflight?: () => Promise<void>;
}

/** Who proves a spend (docs/sdk.md, "Non-custodial mode"). */
export type Custody = "auto" | "non-custodial" | "custodial";

export interface X402AgentOptions {
  /** The pinned facilitator: the only party that ever sees a note's secrets, and only in custodial mode. */
  facilitator: FacilitatorClient;
  /**
   * Who proves: "non-custodial", the agent (the facilitator never receives a note secret, value or label; refused
   * when the facilitator does not relay proofs of this circuit); "custodial", the facilitator, from the note the
   * agent sends; "auto" (default), non-custodial whenever the facilitator's `supported` offers it.
   */
  custody?: Custody;
  /**
   * The engine the agent's own proofs are made with; default the process's shared LocalProver (sdk/prover): the
   * native prover when `npm ci` built it, else the wasm engine.
   */
  prover?: ProofEngine;
  /**
   * The agent's wallet (a NoteVault): each payment reserves a note of its own, so concurrent payments spend
   * different notes, and a payment that finds every note that could pay it held by another waits for one to end.
   */
  notes: NoteStore;
  /**
   * A file where the agent keeps the facilitator's trees between runs (next to its vault, e.g. `<vault>.trees`):
   * a restarted agent then fetches and hashes only the leaves added since. Public data, checked against every
   * quote. Without it, the trees are kept in memory only.
   */
  treesPath?: string;
  /** The facilitator's chain and USDC (its `supported` list names them). */
  network: { chainId: number; asset: string };
  /**
   * Pay when this payment's anonymity set (the independent depositors whose screened deposits could have funded it) is
   * below the privacy minimum, knowing the payment is not private (docs/api.md 4.4). Checked before anything is proven.
   */
  acceptNotPrivate?: boolean;
  /**
   * An RPC of the agent's own and the pool its notes are in (docs/sdk.md, "Roots the agent checks"): every proof is made
   * against roots at least as new as the chain shows there, so the operator cannot learn which leaf is the agent's by
   * serving older trees. Without it the process is warned once (PrivacyWarning X402_ROOTS_UNCHECKED).
   */
  ownRpc?: OwnRpc;
  /** Probe the seller with an invalid payment before spending (docs/api.md 1, step 1). Default true. */
  probe?: boolean;
  /** Retries of one settlement whose answer was lost or is not final yet. Default 4. */
  settleRetries?: number;
  /** The most a seller may ask for one request, atomic USDC (the take comes on top). Default 100000 (0.1 USDC). */
  maxPaymentAtomic?: bigint;
  /** The most that may leave the agent's notes over this agent's life, take included; unlimited when absent. */
  budgetAtomic?: bigint;
  /**
   * The most an access fee may take out of a note when a facilitator asks for one (402 NULLIFIER_NOT_AUTHORIZED,
   * docs/sdk.md "Access fees"): the fee and, on a paid network, the gas of its relay; 0 never pays one. Default
   * 50000 (0.05 USDC).
   */
  maxAccessFeeAtomic?: bigint;
  /**
   * The most a seller's facilitator may charge for relaying a shielded-proof payment (on top of the price), atomic
   * USDC. Default 50000 (0.05 USDC).
   */
  maxRelayFeeAtomic?: bigint;
  /**
   * The longest a shielded-proof payment stays relayable (its validBefore from now), seconds: the seller's
   * maxTimeoutSeconds when shorter. The note is held that long when the seller does not answer. Default 300.
   */
  maxPaymentWindowSeconds?: number;
  /**
   * How long the agent presents the same shielded-proof payment again while the seller answers an outage (its
   * facilitator or record unreachable, the payment being settled or served by another request), ms. Default 180 s.
   */
  presentAgainForMs?: number;
  /** The agent's id in the facilitator's registry, sent with every settlement so its limits apply. */
  agentId?: string;
  /**
   * Pay sellers whose 402 offers x402's `batch-settlement` through private tabs (docs/sdk.md, "Private tab"): one
   * proof of a deposit (TabOptions.depositAtomic, default 0.95 USDC, counted in full against budgetAtomic when the tab
   * opens) pays the seller's requests for the tab's lifetime (default 1 day), each a voucher of a key made for the
   * tab. Needs `notes` to keep tabs (a NoteVault does) and a facilitator that relays the agent's proofs. Off when absent.
   */
  tabs?: TabOptions;
  onEvent?: (event: AgentEvent) => void;
}

/** What the agent reads of the facilitator once: its take and whether it relays the agent's own proofs. */
interface FacilitatorTerms {
  takeBps: bigint;
  /** The entrypoint a quote's withdrawal must name, when the agent proves its spends itself; undefined in custodial mode. */
  provenThrough?: string;
  /** What the facilitator offers: an access fee is proven by the agent whatever the custody (proofsRelayedThrough). */
  supported: SupportedAnswer;
}

/** The access fee a facilitator asked for in a 402 NULLIFIER_NOT_AUTHORIZED (docs/api.md 2.6). */
interface AccessFeeAsked {
  fee: bigint;
  /** What paying it out of the note withdraws: the fee and, on a paid network, its relay's gas (the fee alone when unnamed). */
  withdrawal: bigint;
  treasury: string;
}

/**
 * One settlement request, built once so that every retry sends it identical (the facilitator answers a retry from
 * the note's lease), and how to read the change note off its answer.
 */
interface PreparedSettlement<T> {
  send: () => Promise<T>;
  changeNote: (answer: SettlementAnswer) => Note | undefined;
  /** The request kept with the note while it is sent, to send again after a crash (NoteStore.resume). */
  hold?: SendingHold;
}

/** How long after a tab's opening was sent a process that ended before its answer sends the same opening again. */
const OPENING_RESUMABLE_MS = 3_600_000;

/** The vault's key of a tab's opening: its channel salt, new for every tab. */
const openingRequest = (salt: string) => `open-tab ${salt.toLowerCase()}`;

/**
 * Whether a settlement's failure says the note was not spent: a refusal of the facilitator (but ALREADY_SPENT, which
 * the chain decides), or every attempt answered 503 (FACILITATOR_UNAVAILABLE).
 */
function spentNothing(error: unknown): boolean {
  if (error instanceof X402AgentError) return error.code === "FACILITATOR_UNAVAILABLE";
  return error instanceof FacilitatorError && !error.retryable && error.code !== "ALREADY_SPENT";
}

/** Seconds to wait before retrying a settlement whose answer was lost (no Retry-After to go by). */
const LOST_ANSWER_RETRY_SECONDS = 2;

/** The reference @x402/fetch wrapper's default cap on one payment: 0.1 USDC. */
export const DEFAULT_MAX_PAYMENT_ATOMIC = 100_000n;

/** The default cap on a shielded-proof payment's relay fee: 0.05 USDC. */
export const DEFAULT_MAX_RELAY_FEE_ATOMIC = 50_000n;

/** How long after a refused shielded-proof payment's validBefore the agent looks whether it was relayed anyway. */
const REFUSED_PAYMENT_GRACE_SECONDS = 60;

/** The default bound on a shielded-proof payment's window: 5 minutes. */
export const DEFAULT_MAX_PAYMENT_WINDOW_SECONDS = 300;

/**
 * The default time the agent presents a payment again through a seller's outage: 3 minutes, past a seller's default
 * lease on a payment (120 s), which a seller that crashed serving it leaves to lapse.
 */
export const DEFAULT_PRESENT_AGAIN_FOR_MS = 180_000;

/** The pause before the n-th presentation again of a payment: 0.5 s doubling, at most 8 s. */
const presentAgainDelayMs = (attempt: number) => Math.min(8_000, 500 * 2 ** attempt);

/** setTimeout's longest delay (2^31 - 1 ms): a longer one fires at once. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/** A shielded-proof payment the agent proved, and the note it holds for it until the seller's answer ends it. */
export interface ShieldedPayment extends ShieldedProof {
  held: NoteReservation;
  /** The payment's headers, as sent to the seller (and kept in the vault with the send). */
  headers: Record<string, string>;
}

/** What ending a sent shielded-proof payment needs: its note's reservation, its change note and its window. */
export type SentShieldedPayment = Pick<ShieldedPayment, "held" | "change" | "headers"> & { payment: { validBefore: bigint } };

/** A shielded-proof payment the seller has not answered yet, presented again before any new one for its request. */
interface UnansweredPayment {
  sent: SentShieldedPayment;
  /** Stops the wait that frees or spends the note after the payment's window (refuseShielded). */
  stopHold: () => void;
}

/**
 * The default cap on what an access fee takes out of a note: 0.05 USDC, the mainnet fee of docs/api.md 8 and the gas
 * of its relay on Base with room.
 */
export const DEFAULT_MAX_ACCESS_FEE_ATOMIC = 50_000n;

/**
 * An x402 buyer that pays out of the privacy pool: `fetch` a paid URL, and on a 402 it settles through the
 * pinned facilitator and retries the seller with the payment (docs/api.md 1, "Flow of an x402 payment").
 */
export class X402Agent {
  /** What left or may be leaving the notes: settled payments and those in flight (budgetAtomic). */
  private committed = 0n;
  private terms?: Promise<FacilitatorTerms>;
  /** The facilitator's trees as of this agent's last proof (read from treesPath first): the next one fetches and hashes only the leaves added since. */
  private trees?: Promise<AgentTrees>;
  /** The last write of the trees to treesPath. */
  private savingTrees: Promise<void> = Promise.resolve();
  /** Shielded-proof payments sent and not answered (an outage), by request (method and URL). */
  private readonly unanswered = new Map<string, UnansweredPayment>();
  /** The agent's private tabs, when `tabs` is set. */
  private readonly tabs?: PrivateTabs;
  /** The agent's own view of the pool's roots, when `ownRpc` is set. */
  private readonly chainRoots?: ChainRootsReader;

  constructor(private readonly options: X402AgentOptions) {
    if (options.ownRpc !== undefined) this.chainRoots = new ChainRootsReader(options.ownRpc);
    if (options.tabs !== undefined) {
      if (!isTabStore(options.notes)) throw new TypeError("X402Agent: `tabs` needs `notes` that keep tabs (a NoteVault)");
      this.tabs = new PrivateTabs({ store: options.notes, options: options.tabs, open: (request) => this.openTab(request) });
    }
  }

  /** What counts against budgetAtomic now: settled payments, take included, and those in flight. */
  get committedAtomic(): bigint {
    return this.committed;
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

  /**
   * Pays a seller's exact entry out of the pool through settle-x402 (the agent proves where it can): the one payment
   * behind fetch and the @x402/core scheme (privatePoolScheme). Every cap, the budget and `preflight` come before any
   * note moves. Returns the settlement; its xPayment is the payment the seller takes, signed by the single-use payer.
   */
  async payRequirement(accepted: ExactRequirement, payment: RequirementPayment): Promise<X402Settlement> {
    const { url, resource } = payment;
    const price = BigInt(amountOf(accepted));
    this.emit({ step: "payment-required", url, x402Version: x402VersionOf(accepted), amount: price.toString(), payTo: accepted.payTo, network: accepted.network });
    this.checkPrice(url, price, payment.maxPaymentAtomic);
    await payment.preflight?.();

    const terms = await this.facilitatorTerms();
    const gross = grossForNet(price, terms.takeBps);
    const { facilitator } = this.options;
    const fields = {
      accepts: accepted,
      ...(resource !== undefined && { resource }),
      acceptNotPrivate: this.options.acceptNotPrivate ?? false,
      ...this.agentFields(),
    };
    return this.payFromNotes<X402Settlement>(
      gross,
      async (note) => {
        if (terms.provenThrough === undefined) return custodial(note, (secrets) => facilitator.settleX402({ ...fields, ...secrets }));
        const expected = { route: "settle-x402", withdrawnValue: gross, feeBps: terms.takeBps, processooor: terms.provenThrough, accepted } as const;
        const { body, change } = await this.proveSpend(note, expected, fields);
        return { send: () => facilitator.settleX402Proof(body), changeNote: () => change };
      },
      (settled) => BigInt(settled.gross),
    );
  }

  /**
   * The seller's `batch-settlement` entry in the facilitator's USDC on its chain, on terms the agent opens a tab on
   * (TabOptions.maxWithdrawDelaySeconds), when the agent pays by tab and the 402 offers one; undefined otherwise.
   */
  tabEntryOf(required: PaymentRequired): BatchSettlementRequirement | undefined {
    const { tabs } = this.options;
    if (this.tabs === undefined || tabs === undefined || required.x402Version !== 2) return undefined;
    const { chainId, asset } = this.options.network;
    for (const entry of required.accepts) {
      const parsed = BatchSettlementRequirementSchema.safeParse(entry);
      // A tab on terms the agent does not open is no way to pay: another entry of the 402 may be.
      if (!parsed.success || tabTermsProblem(parsed.data, tabs) !== undefined) continue;
      if (parsed.data.network === `eip155:${chainId}` && parsed.data.asset.toLowerCase() === asset.toLowerCase()) return parsed.data;
    }
    return undefined;
  }

  /**
   * Pays the request on the agent's tab with the seller (docs/sdk.md, "Private tab"): the price within the caps, then
   * a voucher, or the opening of a tab first (openTab) when the agent has none that holds the price.
   */
  async payOnTab(url: string, init: RequestInit, accepted: BatchSettlementRequirement, resource: ResourceInfo, maxPaymentAtomic?: bigint): Promise<Response> {
    const tabs = this.tabsFor(url, accepted, maxPaymentAtomic);
    const response = await tabs.pay({ url, init, accepted, resource });
    this.emit({ step: "paid", url, status: response.status });
    return response;
  }

  /**
   * The payment of one request on the agent's tab, for a client that sends it itself (the @x402/core scheme,
   * PrivateTabScheme): the same caps as payOnTab; the caller hands the seller's answer to its `answered`.
   */
  async prepareTabPayment(url: string, accepted: BatchSettlementRequirement, maxPaymentAtomic?: bigint): Promise<TabPayment> {
    return this.tabsFor(url, accepted, maxPaymentAtomic).prepare(accepted);
  }

  /** The agent's tabs, once the price of a request of `accepted` is within the caps. */
  private tabsFor(url: string, accepted: BatchSettlementRequirement, maxPaymentAtomic?: bigint): PrivateTabs {
    if (this.tabs === undefined) throw new TypeError("X402Agent: private tabs need the `tabs` option");
    this.emit({ step: "payment-required", url, x402Version: 2, amount: accepted.amount, payTo: accepted.payTo, network: accepted.network });
    this.checkPrice(url, BigInt(accepted.amount), maxPaymentAtomic);
    return this.tabs;
  }

  /**
   * Opens a tab: the agent proves the relay of its deposit to the single-use payer against a quote-tab quote (the
   * proof binds the channel) and open-tab relays it, answering the payer's deposit authorization. The deposit plus the
   * take leaves a note, counted against the budget as any payment. Only the agent proves a tab's opening.
   */
  private async openTab({ accepted, payerAuthorizer, salt, depositAtomic }: Parameters<OpenTab>[0]): Promise<OpenTabAnswer> {
    const { facilitator } = this.options;
    // The same tab's opening, sent by a process that ended before its answer: the facilitator answers it again from
    // the note's lease, with no second relay or take.
    const resumed = await this.options.notes.resume?.(openingRequest(salt));
    if (resumed !== undefined) return this.resumeOpening(resumed);
    const terms = await this.facilitatorTerms();
    const processooor = terms.provenThrough;
    if (processooor === undefined) {
      throw new X402AgentError("NON_CUSTODIAL_UNAVAILABLE", `${facilitator.url} does not relay this agent's proofs, and a private tab is opened by the agent's own proof. Nothing was paid.`);
    }
    const gross = grossForNet(depositAtomic, terms.takeBps);
    const fields = {
      accepts: accepted,
      payerAuthorizer,
      salt,
      depositAmount: depositAtomic.toString(),
      acceptNotPrivate: this.options.acceptNotPrivate ?? false,
      ...this.agentFields(),
    };
    const expected = { route: "open-tab", withdrawnValue: gross, feeBps: terms.takeBps, processooor, tab: { accepted, payerAuthorizer, salt } } as const;
    return this.payFromNotes<OpenTabAnswer>(
      gross,
      async (note) => {
        const { body, change } = await this.proveSpend(note, expected, fields);
        const presentation = { request: openingRequest(salt), headers: { body: JSON.stringify(body) }, withdrawnValue: gross };
        return { send: () => facilitator.openTab(body), changeNote: () => change, hold: { untilMs: Date.now() + OPENING_RESUMABLE_MS, presentation } };
      },
      (opened) => BigInt(opened.gross),
    );
  }

  /** Sends again the opening a process that ended kept with its note, and ends the note's reservation by its answer. */
  private async resumeOpening({ reservation, presentation }: { reservation: NoteReservation; presentation: StoredPresentation }): Promise<OpenTabAnswer> {
    // What the earlier process's opening takes counts against this one's budget.
    this.committed += presentation.withdrawnValue;
    let answer: OpenTabAnswer;
    try {
      answer = await this.untilSettled(() => this.options.facilitator.openTab(JSON.parse(presentation.headers.body!) as Record<string, unknown>));
    } catch (error) {
      // Refused, the opening was never relayed (a relayed one is answered from its lease): the note is free, and the
      // tab is opened afresh. Anything else leaves the note to reconcile.
      const freed = spentNothing(error);
      if (freed) this.committed -= presentation.withdrawnValue;
      await (freed ? reservation.released() : reservation.unsettled());
      throw error;
    }
    const change = changeNoteOf(reservation.note, presentation.withdrawnValue);
    await reservation.spent(change.value > 0n ? change : undefined);
    return answer;
  }

  /**
   * The generic path (docs/api.md 4.3): settles `maxAmountRequired` to `payTo` through the facilitator, then repeats the
   * request with `X-Service-Settlement: <txHash>` for a seller that checks the settlement on chain. The take is
   * inside the amount here: the seller receives it less the take.
   */
  async fetchWithSettlement(url: string, init: RequestInit, invoice: { payTo: string; maxAmountRequired: string }): Promise<Response> {
    const amount = BigInt(invoice.maxAmountRequired);
    this.checkPrice(url, amount);
    const terms = await this.facilitatorTerms();
    const { facilitator } = this.options;
    const fields = { paymentDetails: invoice, ...this.agentFields() };
    const answer = await this.payFromNotes<SettleAnswer | SettleProofAnswer>(
      amount,
      async (note) => {
        if (terms.provenThrough === undefined) return custodial(note, ({ serviceDeposit }) => facilitator.settle({ ...fields, serviceDeposit }));
        const expected = { route: "settle", withdrawnValue: amount, feeBps: terms.takeBps, processooor: terms.provenThrough, recipient: invoice.payTo } as const;
        const { body, change } = await this.proveSpend(note, expected, fields);
        return { send: () => facilitator.settleProof(body), changeNote: () => change };
      },
      (settled) => BigInt(settled.amount),
    );
    return this.retryPaid(url, init, { "X-Service-Settlement": answer.txHash });
  }

  /**
   * The seller's shielded-proof entry the agent can pay by its own proof (docs/sdk.md, "Shielded proof"): a v2 entry
   * for its chain and USDC whose pool and entrypoint are its facilitator's, when that facilitator relays proofs of this
   * SDK's circuit and custody is not "custodial" (the agent proves). Undefined when the 402 offers none: the detour.
   */
  async shieldedEntryOf(required: PaymentRequired): Promise<ShieldedRequirement | undefined> {
    if (required.x402Version !== 2 || (this.options.custody ?? "auto") === "custodial") return undefined;
    const pool = await this.shieldedPool();
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
   * Pays a shielded-proof entry (docs/sdk.md, "Shielded proof"): the same caps, budget and privacy acknowledgement as
   * every payment, the relay fee under maxRelayFeeAtomic; then the agent proves the payment out of the smallest note
   * that holds price plus fee and sends it to the seller, whose facilitator relays it when it settles: the pool pays
   * payTo in that one transaction, and nothing moves before. The spent note is marked and its change saved once the
   * seller answers 2xx; a refusal holds the note until the payment's validBefore (ShieldedPaymentRefusedError).
   */
  async payShielded(url: string, init: RequestInit, requirement: ShieldedRequirement, resource: ResourceInfo, maxPaymentAtomic?: bigint): Promise<Response> {
    const request = requestKey(url, init);
    const sent = (await this.unansweredPayment(request)) ?? (await this.proveShieldedRequirement(url, requirement, maxPaymentAtomic, { request, resource }));
    const answer = await this.presentShielded(url, init, sent.headers);
    if ("response" in answer) {
      await this.confirmShielded(sent);
      return answer.response;
    }
    const refused = new ShieldedPaymentRefusedError(url, answer.seller, Number(sent.payment.validBefore), answer.retryable);
    // A refusal read against the chain: a payment the seller refuses as answered already (to a process of this
    // agent that died) was paid, and its change note is in the trees.
    if (!answer.retryable && (await this.landed(sent))) {
      await this.confirmShielded(sent);
      throw refused;
    }
    const stopHold = this.refuseShielded(sent, () => this.unanswered.delete(request));
    if (answer.retryable) this.unanswered.set(request, { sent, stopHold });
    throw refused;
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
    this.committed += presentation.withdrawnValue;
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

  /**
   * Proves the payment of a shielded-proof entry out of a note it reserves, within every cap and the budget. Returns
   * with the reservation recorded as sending (the caller hands the payment out); it ends with confirmShielded or
   * refuseShielded. The proof alone moves nothing.
   */
  async proveShieldedRequirement(
    url: string,
    requirement: ShieldedRequirement,
    maxPaymentAtomic?: bigint,
    /** The request it pays and its resource: the payment is kept with the send, to be presented again after a crash. */
    presented?: { request: string; resource: ResourceInfo },
  ): Promise<ShieldedPayment> {
    const price = BigInt(requirement.amount);
    const fee = BigInt(requirement.extra.fee);
    this.emit({ step: "payment-required", url, x402Version: 2, amount: requirement.amount, payTo: requirement.payTo, network: requirement.network });
    this.checkPrice(url, price, maxPaymentAtomic);
    const maxFee = this.options.maxRelayFeeAtomic ?? DEFAULT_MAX_RELAY_FEE_ATOMIC;
    if (fee > maxFee) {
      throw new X402AgentError("PRICE_ABOVE_MAXIMUM", `${url}'s facilitator asks a relay fee of ${fee} atomic USDC, above maxRelayFeeAtomic ${maxFee}; nothing was paid. Raise maxRelayFeeAtomic to pay it.`);
    }
    const pool = (await this.shieldedPool())!;
    const gross = price + fee;
    const privacy = await this.checkPrivacy(url, gross);
    const chain = await this.ownChain(pool);
    const releaseBudget = this.reserve(gross);
    const held = await this.options.notes.reserve({ atLeast: gross }).catch((error: unknown) => {
      releaseBudget();
      throw error;
    });
    if (held === undefined) {
      releaseBudget();
      throw new X402AgentError("NO_NOTE", `No unspent note holds ${gross} atomic USDC (the price and the relay fee); deposit first.`);
    }
    try {
      const trees = await this.agentTrees();
      const proven = await proveShieldedPayment({
        facilitator: this.options.facilitator,
        prover: this.options.prover ?? sharedProver(),
        note: held.note,
        requirement,
        pool,
        trees,
        nowSeconds: nowSeconds(),
        windowSeconds: this.options.maxPaymentWindowSeconds ?? DEFAULT_MAX_PAYMENT_WINDOW_SECONDS,
        chain,
      });
      this.keepTrees(trees);
      const { proofTimeMs, engine, payment, roots } = proven;
      this.emit({
        step: "proved-payment",
        proofTimeMs,
        engine,
        amount: requirement.amount,
        fee: fee.toString(),
        feeRecipient: payment.feeRecipient,
        validBefore: Number(payment.validBefore),
        roots,
        ...privacy,
      });
      const headers = paymentHeaders(encodeXPayment({ x402Version: 2, ...(presented !== undefined && { resource: presented.resource }), accepted: requirement, payload: proven.payload }));
      const untilMs = Number(proven.payment.validBefore) * 1000;
      await held.sending(presented === undefined ? { untilMs } : { untilMs, presentation: { request: presented.request, headers, withdrawnValue: proven.withdrawnValue } });
      return { ...proven, held, headers };
    } catch (error) {
      await held.released();
      releaseBudget();
      throw error;
    }
  }

  /** The seller took the payment: its facilitator had the pool pay it. The note is spent; its change joins the wallet. */
  async confirmShielded(payment: SentShieldedPayment): Promise<void> {
    await payment.held.spent(payment.change.value > 0n ? payment.change : undefined);
  }

  /**
   * The seller refused the payment. Nothing moved unless its facilitator relays it before its validBefore, so the note
   * stays reserved until then; a minute after it, the agent looks for the payment's change note in its facilitator's
   * trees: there, the note was spent and the change joins the wallet; not there, the note is free again. (A process
   * that ends before leaves the note to NoteVault.reconcile, as any spend whose outcome was lost.)
   */
  refuseShielded(payment: SentShieldedPayment, onSettled: () => void = () => {}): () => void {
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
  private async landed(payment: SentShieldedPayment): Promise<boolean> {
    return changeLanded(this.options.facilitator, await this.agentTrees(), payment.change).catch(() => false);
  }

  private async settleRefused(payment: SentShieldedPayment): Promise<void> {
    try {
      const landed = await changeLanded(this.options.facilitator, await this.agentTrees(), payment.change);
      await (landed ? payment.held.spent(payment.change.value > 0n ? payment.change : undefined) : payment.held.released());
    } catch {
      // The facilitator could not tell: the note waits for NoteVault.reconcile, which asks the chain.
      await payment.held.unsettled().catch(() => undefined);
    }
  }

  /** The agent's pool, when its facilitator relays proofs of this SDK's circuit there (else no shielded proof). */
  private async shieldedPool(): Promise<AgentPool | undefined> {
    const { supported } = await this.facilitatorTerms();
    const entrypoint = await proofsRelayedThrough(supported);
    if (entrypoint === undefined || supported.contracts === undefined) return undefined;
    return { chainId: this.options.network.chainId, entrypoint, privacyPool: supported.contracts.privacyPool, asset: this.options.network.asset };
  }

  /**
   * Whether a payment withdrawing `withdrawnValue` is private: its own anonymity set, as the facilitator counts it
   * (the independent depositors whose screened deposits of at least that value are under an on-chain ASP root). One
   * below the privacy minimum needs acceptNotPrivate, as the facilitator's settles do (docs/api.md 4.4); refused here,
   * before anything is proven.
   */
  private async checkPrivacy(what: string, withdrawnValue: bigint): Promise<PaymentPrivacy> {
    const answer = await this.options.facilitator.anonymitySet(withdrawnValue);
    const privacy = { private: answer.private, anonymitySet: answer.anonymitySet };
    if (privacy.private || this.options.acceptNotPrivate === true) return privacy;
    throw new X402AgentError(
      "PRIVACY_NOT_ACKNOWLEDGED",
      `${what} is NOT private: a payment withdrawing ${withdrawnValue} atomic USDC could have come from ${answer.anonymitySet ?? "an unknown number of"} independent depositor(s), ` +
        `below the privacy minimum of ${answer.minimumForPrivacy}. Nothing was proven or paid; set acceptNotPrivate to pay anyway.`,
    );
  }

  /**
   * The agent's own view of the pool's roots, once the facilitator's pool and entrypoint are the ones its own RPC
   * shows (else POOL_MISMATCH); undefined without ownRpc, which the agent says once.
   */
  private async ownChain(pool: { entrypoint: string; privacyPool?: string }): Promise<ChainRootsReader | undefined> {
    const { chainRoots } = this;
    if (chainRoots === undefined) {
      warnRootsUnchecked();
      return undefined;
    }
    const privacyPool = pool.privacyPool ?? (await this.facilitatorTerms()).supported.contracts?.privacyPool;
    const entrypoint = await chainRoots.entrypoint();
    if (privacyPool?.toLowerCase() !== chainRoots.privacyPool.toLowerCase() || pool.entrypoint.toLowerCase() !== entrypoint.toLowerCase()) {
      throw new X402AgentError(
        "POOL_MISMATCH",
        `${this.options.facilitator.url} names pool ${privacyPool ?? "none"} and entrypoint ${pool.entrypoint}; the agent's notes are in ${chainRoots.privacyPool}, whose entrypoint ` +
          `is ${entrypoint} on its own RPC. Nothing was sent.`,
      );
    }
    return chainRoots;
  }

  private checkPrice(url: string, price: bigint, paymentMaximum?: bigint): void {
    const agentMaximum = this.options.maxPaymentAtomic ?? DEFAULT_MAX_PAYMENT_ATOMIC;
    const maximum = paymentMaximum !== undefined && paymentMaximum < agentMaximum ? paymentMaximum : agentMaximum;
    if (price > maximum) {
      const [cap, remedy] =
        maximum === agentMaximum ? ["this agent's maxPaymentAtomic", "Raise maxPaymentAtomic"] : ["this payment's cap", "Pass a higher maxPaymentAtomic"];
      throw new X402AgentError("PRICE_ABOVE_MAXIMUM", `${url} asks ${price} atomic USDC, above ${cap} of ${maximum}; nothing was paid. ${remedy} to pay it.`);
    }
  }

  /** The take settle-x402 adds to a price and who proves, from the facilitator's `supported` (read once). */
  private facilitatorTerms(): Promise<FacilitatorTerms> {
    this.terms ??= this.options.facilitator
      .supported()
      .then(async (supported) => ({ takeBps: BigInt(supported.settleX402?.takeBps ?? 0), provenThrough: await this.provenThrough(supported), supported }))
      .catch((error: unknown) => {
        this.terms = undefined;
        throw error;
      });
    return this.terms;
  }

  /**
   * The entrypoint the agent's own spends go through, when it proves them itself: the facilitator relays proofs of the
   * same circuit (proofsRelayedThrough) and the custody option allows it.
   */
  private async provenThrough(supported: SupportedAnswer): Promise<string | undefined> {
    const custody = this.options.custody ?? "auto";
    if (custody === "custodial") return undefined;
    const entrypoint = await proofsRelayedThrough(supported);
    if (entrypoint !== undefined || custody === "auto") return entrypoint;
    throw new X402AgentError(
      "NON_CUSTODIAL_UNAVAILABLE",
      `${this.options.facilitator.url} does not relay proofs of this SDK's withdrawal circuit; with custody "non-custodial" no note is sent to it. Nothing was paid.`,
    );
  }

  /**
   * Proves the spend of `note` here against the facilitator's quote (sdk/agent/local-proof.ts): the request's
   * quote and proof, and the change note it creates, which no one else knows.
   */
  private async proveSpend(note: Note, expected: QuoteExpectation, fields: Record<string, unknown>) {
    // An access fee pays the facilitator itself, which knows the note it authorizes: no privacy to judge.
    const privacy = expected.route === "access-fee" ? {} : await this.checkPrivacy("This payment", expected.withdrawnValue);
    const chain = await this.ownChain({ entrypoint: expected.processooor });
    const trees = await this.agentTrees();
    const { quote, proofTimeMs, engine, change, body, roots } = await proveLocally({
      facilitator: this.options.facilitator,
      prover: this.options.prover ?? sharedProver(),
      note,
      expected,
      fields,
      trees,
      chain,
    });
    this.keepTrees(trees);
    this.emit({ step: "proved", proofTimeMs, engine, quote, roots, ...privacy });
    return { body, change: change.value > 0n ? change : undefined };
  }

  /** The facilitator's trees as the agent holds them: read from treesPath the first time, then kept in memory. */
  private agentTrees(): Promise<AgentTrees> {
    const { treesPath } = this.options;
    this.trees ??= treesPath === undefined ? Promise.resolve(emptyTrees()) : loadTrees(treesPath);
    return this.trees;
  }

  /** Writes the trees to treesPath after a proof, out of the payment's way; a failed write only costs the next start a download. */
  private keepTrees(trees: AgentTrees): void {
    const { treesPath } = this.options;
    if (treesPath !== undefined) this.savingTrees = this.savingTrees.then(() => saveTrees(treesPath, trees)).catch(() => undefined);
  }

  private agentFields(): { agentId?: string } {
    return this.options.agentId === undefined ? {} : { agentId: this.options.agentId };
  }

  /**
   * Pays `gross` out of the smallest free note that holds it (reserved for this payment alone), within the budget. A
   * note the facilitator finds too small (INVALID_PAYMENT_AMOUNT: its take or fee floor is more than `supported`
   * said) is released, and the next larger one tried. A note the facilitator wants its access fee for pays it out of
   * itself (payAccessFee), and the payment is made out of the change note that fee authorized. The change note joins
   * the notes as the spent one is marked, in one write. A spend whose outcome is unknown leaves its note reserved
   * until NoteVault.reconcile reads the chain.
   */
  private async payFromNotes<T extends SettlementAnswer>(
    gross: bigint,
    prepare: (note: Note) => Promise<PreparedSettlement<T>>,
    spentBy: (answer: T) => bigint,
  ): Promise<T> {
    const releaseBudget = this.reserve(gross);
    const fail = (error: unknown): never => {
      releaseBudget();
      throw error;
    };
    const tried = new Set<bigint>();
    let tooSmall: unknown;
    for (;;) {
      let held = await this.options.notes.reserve({ atLeast: gross, skip: tried }).catch(fail);
      if (held === undefined) {
        return fail(tooSmall ?? new X402AgentError("NO_NOTE", `No unspent note holds ${gross} atomic USDC, what this payment takes out of a note; deposit first.`));
      }
      tried.add(held.note.commitment);
      let attempt = await this.trySettle(held, prepare);
      const asked = "error" in attempt ? accessFeeAskedBy(attempt.error) : undefined;
      if (asked !== undefined) {
        const change = await this.payAccessFee(held, asked, gross).catch(fail);
        // What the fee left may no longer hold the payment: it joined the notes, and the next note is tried.
        if (change === undefined) continue;
        held = change;
        tried.add(held.note.commitment);
        attempt = await this.trySettle(held, prepare);
      }
      if ("answer" in attempt) {
        this.committed += spentBy(attempt.answer) - gross;
        await held.spent(attempt.prepared.changeNote(attempt.answer));
        this.emit({ step: "settled", answer: attempt.answer });
        return attempt.answer;
      }
      const { error, at } = attempt;
      // Quoting and proving spend nothing, nor does a refusal; SETTLEMENT_UNCERTAIN may have, and stays counted.
      // A facilitator that says the note is spent is not taken at its word: the chain decides (reconcile).
      const spentElsewhere = error instanceof FacilitatorError && error.code === "ALREADY_SPENT";
      const freed = !spentElsewhere && (at === "prepare" || spentNothing(error));
      await (freed ? held.released() : held.unsettled());
      if (at === "send" && error instanceof FacilitatorError && error.code === "INVALID_PAYMENT_AMOUNT") {
        tooSmall = error;
        continue;
      }
      if (freed || spentElsewhere) releaseBudget();
      throw error;
    }
  }

  /**
   * Prepares and sends the settlement out of the held note: its answer, or the error and the step that failed. The
   * reservation records that the spend may leave before it does.
   */
  private async trySettle<T>(
    held: NoteReservation,
    prepare: (note: Note) => Promise<PreparedSettlement<T>>,
  ): Promise<{ prepared: PreparedSettlement<T>; answer: T } | { error: unknown; at: "prepare" | "send" }> {
    let prepared: PreparedSettlement<T>;
    try {
      prepared = await prepare(held.note);
      await held.sending(prepared.hold);
    } catch (error) {
      return { error, at: "prepare" };
    }
    try {
      return { prepared, answer: await this.untilSettled(prepared.send) };
    } catch (error) {
      return { error, at: "send" };
    }
  }

  /**
   * Pays the access fee the facilitator asked for out of the held note itself (docs/sdk.md "Access fees"): the agent
   * proves a withdrawal of the fee to the treasury whose AccessFeePaid names its change note, and the facilitator
   * relays it, so that no wallet appears with the note. Whatever the custody, the agent proves it: the facilitator
   * learns no secret. Ends the note's reservation: the note is marked spent and its change note, now authorized,
   * returned reserved for this payment when it still holds `gross`; otherwise the change joins the notes and the
   * answer is undefined.
   */
  private async payAccessFee(held: NoteReservation, asked: AccessFeeAsked, gross: bigint): Promise<NoteReservation | undefined> {
    const { facilitator } = this.options;
    const { note } = held;
    const refuse = async (message: string): Promise<never> => {
      await held.released();
      throw new X402AgentError("ACCESS_FEE_REFUSED", message);
    };
    const maximum = this.options.maxAccessFeeAtomic ?? DEFAULT_MAX_ACCESS_FEE_ATOMIC;
    if (asked.withdrawal > maximum) {
      return refuse(
        `${facilitator.url} asks an access fee of ${asked.fee} atomic USDC for the note, ${asked.withdrawal} out of the note with its relay's gas, above maxAccessFeeAtomic ${maximum}; nothing was paid. Raise maxAccessFeeAtomic to pay it out of the note.`,
      );
    }
    const relaysProofsThrough = await proofsRelayedThrough((await this.facilitatorTerms()).supported);
    if (relaysProofsThrough === undefined) {
      return refuse(`${facilitator.url} asks an access fee but relays no proofs of this SDK's circuit, so the note cannot pay it; nothing was paid.`);
    }
    const releaseFee = this.reserve(asked.withdrawal);
    const authorizedNullifierHash = nullifierHashOf(deriveChangeSecrets(note).nullifier);
    const expected = { route: "access-fee", withdrawnValue: asked.withdrawal, feeBps: 0n, processooor: relaysProofsThrough, recipient: asked.treasury, authorizedNullifierHash } as const;
    // Named only when it is more than the fee: a facilitator that asks the fee alone may know no such field.
    const withdrawal = asked.withdrawal === asked.fee ? {} : { withdrawnValue: asked.withdrawal.toString() };
    let answer: AccessFeeProofAnswer;
    let change: Note | undefined;
    try {
      const proven = await this.proveSpend(note, expected, { authorizedNullifierHash: authorizedNullifierHash.toString(), ...withdrawal });
      change = proven.change;
      await held.sending();
      answer = await this.untilSettled(() => facilitator.accessFeeProof(proven.body));
    } catch (error) {
      const uncertain = error instanceof X402AgentError && error.code === "SETTLEMENT_UNCERTAIN";
      if (!uncertain) releaseFee();
      await (uncertain ? held.unsettled() : held.released());
      throw error;
    }
    this.emit({ step: "access-fee-paid", answer });
    if (change === undefined || change.value < gross) {
      await held.spent(change);
      return undefined;
    }
    return held.spentInto(change);
  }

  /** Counts `gross` against budgetAtomic until released; refuses when it does not fit. */
  private reserve(gross: bigint): () => void {
    const budget = this.options.budgetAtomic;
    if (budget !== undefined && this.committed + gross > budget) {
      throw new X402AgentError(
        "BUDGET_EXHAUSTED",
        `This payment takes ${gross} atomic USDC; ${this.committed} of the agent's budget of ${budget} is used. Nothing was paid.`,
      );
    }
    this.committed += gross;
    let released = false;
    return () => {
      if (!released) this.committed -= gross;
      released = true;
    };
  }

  /** The seller's exact entry in the facilitator's USDC on its chain; NO_USABLE_ENTRY when `required` offers none. */
  usableEntry(required: PaymentRequired, url: string): ExactRequirement {
    const accepted = selectExactRequirement(required, this.options.network);
    if (accepted === undefined) {
      throw new X402AgentError("NO_USABLE_ENTRY", `${url}: ${whyNoExactRequirement(required, this.options.network)} Nothing was paid.`);
    }
    return accepted;
  }

  /** docs/api.md 1, step 1: an invalid payment the seller must reject with a verification error, before any note moves. */
  private async probe(url: string, init: RequestInit, accepted: ExactRequirement, resource?: ResourceInfo): Promise<void> {
    const response = await fetchSameOrigin(url, withHeaders(init, paymentHeaders(encodeXPayment(await buildProbePayment(accepted, resource)))));
    const verdict = await classifyProbeResponse(response);
    this.emit({ step: "probe", verdict, status: response.status });
    if (verdict === "incompatible") {
      throw new X402AgentError("SELLER_INCOMPATIBLE", `${url} did not verify a probe payment as x402 sellers do; no note was touched.`);
    }
  }

  /**
   * Runs one settlement request until it is final. A lost answer, an unconfirmed withdrawal and a busy note are
   * retried with the same request, which the facilitator answers from the note's lease: it never pays twice.
   */
  private async untilSettled<T>(settle: () => Promise<T>): Promise<T> {
    const retries = this.options.settleRetries ?? 4;
    // Whether any attempt may have spent the note: a lost answer or one in flight, not a 503 (nothing was spent).
    let maySpend = false;
    for (let attempt = 0; ; attempt++) {
      try {
        return await settle();
      } catch (error) {
        const lostAnswer = !(error instanceof FacilitatorError);
        const retryable = lostAnswer || error.retryable;
        if (!retryable) throw error;
        maySpend ||= lostAnswer || error.status !== 503;
        if (attempt >= retries && !maySpend) {
          throw new X402AgentError(
            "FACILITATOR_UNAVAILABLE",
            `The facilitator could not take the payment in ${retries + 1} attempts (${(error as Error).message}); it spent nothing and the note is free: retry later.`,
          );
        }
        if (attempt >= retries) {
          throw new X402AgentError(
            "SETTLEMENT_UNCERTAIN",
            `The settlement is not final after ${retries + 1} attempts (${(error as Error).message}). The note may be spent: retry the same payment later, do not use the note elsewhere.`,
          );
        }
        await sleep(1000 * (lostAnswer ? LOST_ANSWER_RETRY_SECONDS : (error.retryAfterSeconds ?? LOST_ANSWER_RETRY_SECONDS)));
      }
    }
  }

  private async retryPaid(url: string, init: RequestInit, headers: Record<string, string>): Promise<Response> {
    const response = await fetchSameOrigin(url, withHeaders(init, headers));
    this.emit({ step: "paid", url, status: response.status });
    return response;
  }

  private emit(event: AgentEvent): void {
    this.options.onEvent?.(event);
  }
}

/** Whether this process said that an agent proves against unchecked roots (warnRootsUnchecked). */
let saidRootsUnchecked = false;

/**
 * Says once in the process's life, as a Node warning (stderr unless the process listens for `warning`), that an agent
 * without ownRpc proves against roots nobody checked.
 */
function warnRootsUnchecked(): void {
  if (saidRootsUnchecked) return;
  saidRootsUnchecked = true;
  process.emitWarning(
    "An X402Agent without ownRpc proves against the roots its facilitator serves, unchecked: an operator that serves older trees one step at a " +
      "time can learn which leaf is the agent's note, and so which deposit pays. Set ownRpc to an RPC the operator does not run (docs/sdk.md, \"Roots the agent checks\").",
    { type: "PrivacyWarning", code: "X402_ROOTS_UNCHECKED" },
  );
}

function isTabStore(notes: NoteStore): notes is NoteStore & TabStore {
  return typeof (notes as Partial<TabStore>).tab === "function" && typeof (notes as Partial<TabStore>).saveTab === "function";
}

/** A request as the agent pays it: its method and URL. */
function requestKey(url: string, init: RequestInit): string {
  return `${(init.method ?? "GET").toUpperCase()} ${url}`;
}

/**
 * A custodial settlement: the note and the change secrets the agent derived go to the facilitator, which proves
 * and returns the change note.
 */
function custodial<T extends SettleX402Answer | SettleAnswer>(
  note: Note,
  settle: (secrets: { serviceDeposit: WireNote; nextNullifier: string; nextSecret: string }) => Promise<T>,
): PreparedSettlement<T> {
  const change = deriveChangeSecrets(note);
  const secrets = { serviceDeposit: noteToWire(note), nextNullifier: change.nullifier.toString(), nextSecret: change.secret.toString() };
  return { send: () => settle(secrets), changeNote: (answer) => ("nextDeposit" in answer && answer.nextDeposit !== undefined ? noteFromWire(answer.nextDeposit) : undefined) };
}

/**
 * The entrypoint a facilitator relays this SDK's proofs through, when it does: it offers non-custodial spends of the
 * same circuit (the SHA-256 of its verification key is this SDK's).
 */
async function proofsRelayedThrough(supported: SupportedAnswer): Promise<string | undefined> {
  const offered = supported.nonCustodial?.enabled === true && supported.nonCustodial.verificationKeySha256 === (await verificationKeySha256());
  return offered ? supported.contracts?.entrypoint : undefined;
}

/** The access fee a 402 NULLIFIER_NOT_AUTHORIZED asks for, from its `authorization` block; undefined for any other error. */
function accessFeeAskedBy(error: unknown): AccessFeeAsked | undefined {
  if (!(error instanceof FacilitatorError) || error.code !== "NULLIFIER_NOT_AUTHORIZED") return undefined;
  const { requiredFeeAtomic, noteWithdrawalAtomic = requiredFeeAtomic, treasury } = (error.body.authorization ?? {}) as Record<string, unknown>;
  const atomic = (value: unknown): value is string => typeof value === "string" && /^[0-9]+$/.test(value);
  if (!atomic(requiredFeeAtomic) || !atomic(noteWithdrawalAtomic) || typeof treasury !== "string") return undefined;
  const [fee, withdrawal] = [BigInt(requiredFeeAtomic), BigInt(noteWithdrawalAtomic)];
  return withdrawal < fee ? undefined : { fee, withdrawal, treasury };
}

/** The PaymentNotAcceptedError of a paid request the seller answered with `response` (consumes its body). */
async function unaccepted(url: string, response: Response, answer: X402Settlement): Promise<PaymentNotAcceptedError> {
  const body = await response.text();
  const reason = settlementErrorOf(response.headers) ?? parsePaymentRequired(response.headers, body)?.error;
  const paymentResponse = paymentResponseHeaderOf(response.headers);
  return paymentNotAccepted(url, { status: response.status, body, ...(reason !== undefined && { reason }), ...(paymentResponse !== undefined && { paymentResponse }) }, answer);
}

/** The PaymentNotAcceptedError of the settlement `answer`, which the seller answered with `seller`. */
export function paymentNotAccepted(url: string, seller: UnacceptedPayment["seller"], answer: X402Settlement): PaymentNotAcceptedError {
  const expiry = new Date(answer.validBefore * 1000).toISOString();
  return new PaymentNotAcceptedError({
    url,
    seller,
    payer: answer.payer,
    amount: answer.amount,
    gross: answer.gross,
    fundingTxHash: answer.fundingTxHash,
    validBefore: answer.validBefore,
    refund:
      `The seller can use the authorization until ${expiry} (validBefore ${answer.validBefore}). After that the operator's payer sweep ` +
      "deposits what the payer still holds back into the pool as a refund note under this note's refund secrets; recoverNotes finds it from the seed.",
  });
}

function withHeaders(init: RequestInit, headers: Record<string, string>): RequestInit {
  const merged = new Headers(init.headers);
  for (const [name, value] of Object.entries(headers)) merged.set(name, value);
  return { ...init, headers: merged };
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

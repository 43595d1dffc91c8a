import { setTimeout as sleep } from "node:timers/promises";
import { FacilitatorError, noteFromWire, noteToWire, type FacilitatorClient, type SettleAnswer, type SettleX402Answer } from "../client/facilitator-client.js";
import { deriveChangeSecrets, type Note } from "../note/note.js";
import {
  amountOf,
  buildProbePayment,
  classifyProbeResponse,
  encodeXPayment,
  paymentHeaders,
  readPaymentRequired,
  selectExactRequirement,
  type ExactRequirement,
  type ProbeVerdict,
  type ResourceInfo,
} from "../../x402/index.js";
import type { VaultEntry } from "./vault.js";

/** Where the agent keeps its notes; NoteVault is one. */
export interface NoteStore {
  list(): Promise<VaultEntry[]>;
  save(note: Note): Promise<void>;
  markSpent(commitment: bigint): Promise<void>;
}

export type X402AgentErrorCode =
  /** The seller answered 402 without x402 details: a generic paywall. */
  | "NOT_X402"
  /** The seller's 402 offers no `exact` entry in the facilitator's USDC on its chain. */
  | "NO_USABLE_ENTRY"
  /** The free probe found the seller would not read an x402 payment: no note was touched. */
  | "SELLER_INCOMPATIBLE"
  /** No unspent note holds the seller's amount. */
  | "NO_NOTE"
  /** The settlement's outcome is still unknown after the retries: retry later, the note may be spent. */
  | "SETTLEMENT_UNCERTAIN";

export class X402AgentError extends Error {
  constructor(
    readonly code: X402AgentErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "X402AgentError";
  }
}

/** What the agent does, step by step (the demo prints these). Holds no note secret. */
export type AgentEvent =
  | { step: "payment-required"; url: string; x402Version: 1 | 2; amount: string; payTo: string; network: string }
  | { step: "probe"; verdict: ProbeVerdict; status: number }
  | { step: "settled"; answer: SettleX402Answer | SettleAnswer }
  | { step: "paid"; url: string; status: number };

export interface X402AgentOptions {
  /** The pinned facilitator: the only party that ever sees a note's secrets. */
  facilitator: FacilitatorClient;
  notes: NoteStore;
  /** The facilitator's chain and USDC (its `supported` list names them). */
  network: { chainId: number; asset: string };
  /** Pay while the pool is below the privacy minimum, knowing the payment is not private (spec 4.4). */
  acceptNotPrivate?: boolean;
  /** Probe the seller with an invalid payment before spending (spec 1, step 1). Default true. */
  probe?: boolean;
  /** Retries of one settlement whose answer was lost or is not final yet. Default 4. */
  settleRetries?: number;
  onEvent?: (event: AgentEvent) => void;
}

/** Seconds to wait before retrying a settlement whose answer was lost (no Retry-After to go by). */
const LOST_ANSWER_RETRY_SECONDS = 2;

/**
 * An x402 buyer that pays out of the privacy pool: `fetch` a paid URL, and on a 402 it settles through the
 * pinned facilitator and retries the seller with the payment (spec 1, "Flow for an x402 payment").
 */
export class X402Agent {
  constructor(private readonly options: X402AgentOptions) {}

  /** Fetches `url`; a 402 from an x402 seller is paid privately and the request repeated with the payment. */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const first = await fetch(url, init);
    if (first.status !== 402) return first;
    const { accepted, resource } = await this.requirementOf(first, url);
    if (this.options.probe ?? true) await this.probe(url, init, accepted, resource);

    const note = await this.noteFor(BigInt(amountOf(accepted)));
    const change = deriveChangeSecrets(note);
    const answer = await this.untilSettled(() =>
      this.options.facilitator.settleX402({
        accepts: accepted,
        ...(resource !== undefined && { resource }),
        serviceDeposit: noteToWire(note),
        nextNullifier: change.nullifier.toString(),
        nextSecret: change.secret.toString(),
        acceptNotPrivate: this.options.acceptNotPrivate ?? false,
      }),
    );
    await this.replaceNote(note, answer.nextDeposit === undefined ? undefined : noteFromWire(answer.nextDeposit));
    this.emit({ step: "settled", answer });
    return this.retryPaid(url, init, paymentHeaders(answer.xPayment));
  }

  /**
   * The generic path (spec 4.3): settles `maxAmountRequired` to `payTo` through the facilitator, then repeats the
   * request with `X-Service-Settlement: <txHash>` for a seller that checks the settlement on chain.
   */
  async fetchWithSettlement(url: string, init: RequestInit, invoice: { payTo: string; maxAmountRequired: string }): Promise<Response> {
    const note = await this.noteFor(BigInt(invoice.maxAmountRequired));
    const answer = await this.untilSettled(() =>
      this.options.facilitator.settle({ paymentDetails: invoice, serviceDeposit: noteToWire(note) }),
    );
    await this.replaceNote(note, answer.nextDeposit === undefined ? undefined : noteFromWire(answer.nextDeposit));
    this.emit({ step: "settled", answer });
    return this.retryPaid(url, init, { "X-Service-Settlement": answer.txHash });
  }

  /** The seller's exact USDC entry on the facilitator's chain, from its 402 (v2 header or v1 body). */
  private async requirementOf(response: Response, url: string): Promise<{ accepted: ExactRequirement; resource?: ResourceInfo }> {
    const required = await readPaymentRequired(response);
    if (required === undefined) throw new X402AgentError("NOT_X402", `${url} answered 402 without x402 payment details; nothing was paid.`);
    const accepted = selectExactRequirement(required, this.options.network);
    if (accepted === undefined) {
      throw new X402AgentError(
        "NO_USABLE_ENTRY",
        `${url} offers no exact payment in USDC ${this.options.network.asset} on chain ${this.options.network.chainId}; nothing was paid.`,
      );
    }
    this.emit({
      step: "payment-required",
      url,
      x402Version: required.x402Version,
      amount: amountOf(accepted),
      payTo: accepted.payTo,
      network: accepted.network,
    });
    return { accepted, resource: required.x402Version === 2 ? required.resource : undefined };
  }

  /** Spec 1, step 1: an invalid payment the seller must reject with a verification error, before any note moves. */
  private async probe(url: string, init: RequestInit, accepted: ExactRequirement, resource?: ResourceInfo): Promise<void> {
    const response = await fetch(url, withHeaders(init, paymentHeaders(encodeXPayment(await buildProbePayment(accepted, resource)))));
    const verdict = await classifyProbeResponse(response);
    this.emit({ step: "probe", verdict, status: response.status });
    if (verdict === "incompatible") {
      throw new X402AgentError("SELLER_INCOMPATIBLE", `${url} did not verify a probe payment as x402 sellers do; no note was touched.`);
    }
  }

  /** The smallest unspent note that holds `amount` (the facilitator refuses it if the take does not fit too). */
  private async noteFor(amount: bigint): Promise<Note> {
    const candidates = (await this.options.notes.list())
      .filter((entry) => !entry.spent && entry.note.value >= amount)
      .sort((a, b) => (a.note.value < b.note.value ? -1 : a.note.value > b.note.value ? 1 : 0));
    const note = candidates[0]?.note;
    if (note === undefined) throw new X402AgentError("NO_NOTE", `No unspent note holds ${amount} atomic USDC; deposit first.`);
    return note;
  }

  /**
   * Runs one settlement request until it is final. A lost answer, an unconfirmed withdrawal and a busy note are
   * retried with the same request, which the facilitator answers from the note's lease: it never pays twice.
   */
  private async untilSettled<T>(settle: () => Promise<T>): Promise<T> {
    const retries = this.options.settleRetries ?? 4;
    for (let attempt = 0; ; attempt++) {
      try {
        return await settle();
      } catch (error) {
        const lostAnswer = !(error instanceof FacilitatorError);
        const retryable = lostAnswer || error.retryable;
        if (!retryable) throw error;
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

  /** Saves the change note before anything else: the spent note is gone once the facilitator settled. */
  private async replaceNote(spent: Note, next: Note | undefined): Promise<void> {
    if (next !== undefined) await this.options.notes.save(next);
    await this.options.notes.markSpent(spent.commitment);
  }

  private async retryPaid(url: string, init: RequestInit, headers: Record<string, string>): Promise<Response> {
    const response = await fetch(url, withHeaders(init, headers));
    this.emit({ step: "paid", url, status: response.status });
    return response;
  }

  private emit(event: AgentEvent): void {
    this.options.onEvent?.(event);
  }
}

function withHeaders(init: RequestInit, headers: Record<string, string>): RequestInit {
  const merged = new Headers(init.headers);
  for (const [name, value] of Object.entries(headers)) merged.set(name, value);
  return { ...init, headers: merged };
}

import { noteWithCommitment, type Note } from "../note/note.js";
import type { TabChannelConfig } from "../circuit/context.js";

/**
 * A facilitator answer that is not a success: the API's one error body (docs/relayer.md). `retryAfterSeconds` is
 * the Retry-After header, when the facilitator says a retry of the same request can succeed.
 */
export class FacilitatorError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown>,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = "FacilitatorError";
  }

  /**
   * The same request may succeed later and the note must not be used for anything else meanwhile: another
   * request holds it, its withdrawal is unconfirmed, or the facilitator is briefly unable to serve.
   */
  get retryable(): boolean {
    return this.retryAfterSeconds !== undefined || ["SETTLEMENT_IN_PROGRESS", "SETTLEMENT_UNCERTAIN"].includes(this.code);
  }
}

/** A note on the wire: every field a decimal string (docs/api.md 2.2). */
export type WireNote = Record<"nullifier" | "secret" | "value" | "label" | "commitment", string>;

export const noteToWire = (note: Note): WireNote => ({
  nullifier: note.nullifier.toString(),
  secret: note.secret.toString(),
  value: note.value.toString(),
  label: note.label.toString(),
  commitment: note.commitment.toString(),
});

/** The note a wire note names, in the form its commitment says; throws when its fields make neither form. */
export function noteFromWire(wire: WireNote): Note {
  const secrets = { nullifier: BigInt(wire.nullifier), secret: BigInt(wire.secret) };
  const note = noteWithCommitment(BigInt(wire.value), BigInt(wire.label), secrets, BigInt(wire.commitment));
  if (note === undefined) throw new Error("the note's value, label, nullifier and secret do not make its commitment");
  return note;
}

/** The docs/api.md 2.4 privacy block every settlement carries. */
export interface PrivacyAnswer {
  private: boolean;
  anonymitySet: number | null;
  minimumForPrivacy: number;
  disclosure: string;
  /** Who proved the spend, and what the facilitator learnt of the note. */
  custody: { mode: "custodial" | "non-custodial"; relayerLearned: string };
}

/** POST /api/facilitator/settle-x402's answer (docs/relayer.md). */
export interface SettleX402Answer {
  settled: true;
  xPayment: string;
  x402Version: 1 | 2;
  payer: string;
  fundingTxHash: string;
  amount: string;
  gross: string;
  fee: string;
  remainingValue: string;
  nextDeposit?: WireNote;
  validBefore: number;
  proofTimeMs: number | null;
  replayed: boolean;
  privacy: PrivacyAnswer;
}

/** POST /api/facilitator/settle's answer. */
export interface SettleAnswer {
  settled: true;
  txHash: string;
  amount: string;
  fee: string;
  remainingValue: string;
  nextDeposit?: WireNote;
  proofTimeMs: number | null;
  replayed: boolean;
  privacy: PrivacyAnswer;
}

export interface SupportedAnswer {
  supported: { scheme: string; network: string; asset: string }[];
  contracts?: { entrypoint: string; privacyPool: string; network: string };
  /** settle-x402's terms: the take added on top of a seller's price, and the payment windows it pays. */
  settleX402?: { takeBps: number; minimumMaxTimeoutSeconds: number; maximumMaxTimeoutSeconds: number };
  /** Present when the facilitator relays proofs the agent makes itself (docs/sdk.md, "Non-custodial mode"). */
  nonCustodial?: { enabled: boolean; circuit: string; verificationKeySha256: string; quoteTtlSeconds: number };
  [field: string]: unknown;
}

/** What a proof of a non-custodial spend must bind, as the facilitator quoted it; sent back unchanged with the proof. */
export interface QuoteAnswer {
  route: "settle" | "settle-x402" | "open-tab" | "access-fee";
  nullifierHash: string;
  processooor: string;
  scope: string;
  recipient: string;
  feeRecipient: string;
  feeBps: number;
  withdrawnValue: string;
  fee: string;
  context: string;
  stateRoot: string;
  stateTreeDepth: number;
  stateTreeSize: number;
  aspRoot: string;
  aspTreeDepth: number;
  aspTreeSize: number;
  expiresAt: number;
  /**
   * settle-x402: the pool's one transfer to the seller, bound by the context (its nonce the note's nullifier hash);
   * open-tab: the channel's id as paymentNonce and the tab's reclaimableAfter as paymentValidBefore (its TabOpening).
   */
  paymentNonce?: string;
  paymentValidAfter?: number;
  paymentValidBefore?: number;
  /** access-fee: the nullifier hash the fee authorizes, bound by the context (AccessFeeData). */
  authorizedNullifierHash?: string;
  signature: string;
}

/** POST /api/facilitator/settle-proof's answer: the facilitator never saw the note, so it returns no change note. */
export interface SettleProofAnswer extends Omit<SettleAnswer, "remainingValue" | "nextDeposit" | "proofTimeMs"> {
  changeCommitment: string;
}

/** POST /api/facilitator/settle-x402-proof's answer. */
export interface SettleX402ProofAnswer extends Omit<SettleX402Answer, "remainingValue" | "nextDeposit" | "proofTimeMs"> {
  changeCommitment: string;
}

/** @x402/evm's ChannelConfig of a tab, as the facilitator built it. */
export type ChannelConfigAnswer = TabChannelConfig;

/** POST /api/facilitator/quote-tab's answer: the quote, the channel it binds (its payer the note's TabPayer) and the tab's lifetime. */
export interface QuoteTabAnswer {
  quote: QuoteAnswer;
  payer: string;
  channelConfig: ChannelConfigAnswer;
  channelId: string;
  reclaimableAfter: number;
}

/** POST /api/facilitator/open-tab's answer: the channel and the relay that spent the note and deposited into it. */
export interface OpenTabAnswer {
  opened: true;
  payer: string;
  channelConfig: ChannelConfigAnswer;
  channelId: string;
  reclaimableAfter: number;
  fundingTxHash: string;
  gross: string;
  fee: string;
  changeCommitment: string;
  replayed: boolean;
  privacy: PrivacyAnswer;
}

/** POST /api/facilitator/access-fee-proof's answer: the fee's withdrawal, and the note it authorized. */
export interface AccessFeeProofAnswer extends SettleProofAnswer {
  authorized: true;
  authorizedNullifierHash: string;
}

/**
 * A tree as GET /api/facilitator/trees serves it: its shape, and its leaves from position `from` on (where the
 * agent asked, or 0 when the tree has fewer leaves than that: it was rebuilt), packed (sdk/tree/packed-leaves.ts).
 */
export interface TreeAnswer {
  root: string;
  depth: number;
  size: number;
  from: number;
  leaves: string;
}

/** GET /api/facilitator/trees: the state tree and the on-chain ASP tree. */
/** GET /api/facilitator/anonymity-set: whether a payment of that value is private, and its anonymity set. */
export interface AnonymitySetAnswer {
  withdrawnValue: string;
  private: boolean;
  /** Null while the facilitator cannot count it (its indexer unavailable): never private then. */
  anonymitySet: number | null;
  minimumForPrivacy: number;
  /** The on-chain ASP root whose approved deposits were counted ("0" when none; null with the set when unknown). */
  aspRoot: string | null;
}

export interface TreesAnswer {
  state: TreeAnswer;
  asp: TreeAnswer;
}

/** Hosts a plain-http facilitator may have: the loopback interface never leaves the machine. */
function isLoopback(url: URL): boolean {
  const host = url.hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * The agent's client of one facilitator. Its base URL is pinned at construction: note secrets, when the agent sends
 * them at all (custodial mode), go to this facilitator and nowhere else (docs/api.md 5, item 2). So it must be https (plain http only on loopback), and a redirect
 * is an error, never followed: a 307 would re-send a settle body, secrets included, to wherever it points.
 */
export class FacilitatorClient {
  private readonly baseUrl: URL;

  constructor(
    baseUrl: string,
    private readonly timeoutMs = 120_000,
    /** The agent key its registration returned: sent as X-Agent-Key, which a settle naming the agentId needs. */
    private readonly agentKey?: string,
  ) {
    this.baseUrl = new URL(baseUrl);
    if (this.baseUrl.protocol !== "https:" && !(this.baseUrl.protocol === "http:" && isLoopback(this.baseUrl))) {
      throw new Error(`The facilitator URL must be https (plain http only on loopback), not ${this.baseUrl.origin}: note secrets travel to it.`);
    }
  }

  get url(): string {
    return this.baseUrl.origin;
  }

  supported(): Promise<SupportedAnswer> {
    return this.request("GET", "/api/facilitator/supported");
  }

  settleX402(body: Record<string, unknown>): Promise<SettleX402Answer> {
    return this.request("POST", "/api/facilitator/settle-x402", body);
  }

  settle(body: Record<string, unknown>): Promise<SettleAnswer> {
    return this.request("POST", "/api/facilitator/settle", body);
  }

  quote(body: Record<string, unknown>): Promise<{ quote: QuoteAnswer }> {
    return this.request("POST", "/api/facilitator/quote", body);
  }

  quoteX402(body: Record<string, unknown>): Promise<{ quote: QuoteAnswer }> {
    return this.request("POST", "/api/facilitator/quote-x402", body);
  }

  settleProof(body: Record<string, unknown>): Promise<SettleProofAnswer> {
    return this.request("POST", "/api/facilitator/settle-proof", body);
  }

  settleX402Proof(body: Record<string, unknown>): Promise<SettleX402ProofAnswer> {
    return this.request("POST", "/api/facilitator/settle-x402-proof", body);
  }

  quoteTab(body: Record<string, unknown>): Promise<QuoteTabAnswer> {
    return this.request("POST", "/api/facilitator/quote-tab", body);
  }

  openTab(body: Record<string, unknown>): Promise<OpenTabAnswer> {
    return this.request("POST", "/api/facilitator/open-tab", body);
  }

  /** A quote of an access fee paid out of the note of `nullifierHash`, authorizing the note of `authorizedNullifierHash`. */
  quoteAccessFee(body: Record<string, unknown>): Promise<{ quote: QuoteAnswer }> {
    return this.request("POST", "/api/facilitator/quote-access-fee", body);
  }

  accessFeeProof(body: Record<string, unknown>): Promise<AccessFeeProofAnswer> {
    return this.request("POST", "/api/facilitator/access-fee-proof", body);
  }

  /**
   * The leaves of both trees after the first `from.state` and `from.asp` (default: every leaf). Public, and the
   * same for every agent that holds as many: asking says nothing of the agent's own note.
   */
  trees(from: { state: number; asp: number } = { state: 0, asp: 0 }): Promise<TreesAnswer> {
    return this.request("GET", `/api/facilitator/trees?stateFrom=${from.state}&aspFrom=${from.asp}`);
  }

  /**
   * The anonymity set of a payment withdrawing `withdrawnValue` (price and take): the independent depositors whose
   * screened deposits of at least that value are under an on-chain ASP root (docs/api.md, "Anonymity set of a payment").
   */
  anonymitySet(withdrawnValue: bigint): Promise<AnonymitySetAnswer> {
    return this.request("GET", `/api/facilitator/anonymity-set?withdrawnValue=${withdrawnValue}`);
  }

  private async request<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
    const url = new URL(path, this.baseUrl);
    if (url.origin !== this.baseUrl.origin) throw new Error("refusing to send a request outside the pinned facilitator");
    const response = await fetch(url, {
      method,
      redirect: "manual",
      headers: {
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...(this.agentKey === undefined ? {} : { "x-agent-key": this.agentKey }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    if (response.status >= 300 && response.status < 400) {
      throw new FacilitatorError(
        response.status,
        "REDIRECT_REFUSED",
        `The facilitator answered ${response.status} with a redirect to ${response.headers.get("location") ?? "nowhere"}; it is not followed, so nothing was sent there. Check the facilitator URL.`,
        {},
      );
    }
    const answer = (await response.json()) as Record<string, unknown>;
    // An uncertain settlement is answered 202 with settled:false: not a success, whatever the status class.
    if (!response.ok || answer.settled === false) {
      const retryAfter = response.headers.get("retry-after");
      throw new FacilitatorError(
        response.status,
        String(answer.code ?? "UNKNOWN"),
        String(answer.error ?? `HTTP ${response.status}`),
        answer,
        retryAfter === null ? undefined : Number(retryAfter),
      );
    }
    return answer as T;
  }
}

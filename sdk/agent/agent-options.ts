import type {
  AccessFeeProofAnswer,
  FacilitatorClient,
  OpenTabAnswer,
  QuoteAnswer,
  SettleAnswer,
  SettleProofAnswer,
  SettleX402Answer,
  SettleX402ProofAnswer,
} from "../client/facilitator-client.js";
import type { EngineName, ProofEngine } from "../prover/local-prover.js";
import type { ProbeVerdict, ResourceInfo } from "../x402/index.js";
import type { OwnRpc, RootsSource } from "./chain-roots.js";
import type { NoteStore } from "./note-reservation.js";
import type { TabOptions } from "./private-tab.js";

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

/** The reference @x402/fetch wrapper's default cap on one payment: 0.1 USDC. */
export const DEFAULT_MAX_PAYMENT_ATOMIC = 100_000n;

/** The default cap on a shielded-proof payment's relay fee: 0.05 USDC. */
export const DEFAULT_MAX_RELAY_FEE_ATOMIC = 50_000n;

/** The default bound on a shielded-proof payment's window: 5 minutes. */
export const DEFAULT_MAX_PAYMENT_WINDOW_SECONDS = 300;

/**
 * The default time the agent presents a payment again through a seller's outage: 3 minutes, past a seller's default
 * lease on a payment (120 s), which a seller that crashed serving it leaves to lapse.
 */
export const DEFAULT_PRESENT_AGAIN_FOR_MS = 180_000;

/**
 * The default cap on what an access fee takes out of a note: 0.05 USDC, the mainnet fee of docs/api.md 8 and the gas
 * of its relay on Base with room.
 */
export const DEFAULT_MAX_ACCESS_FEE_ATOMIC = 50_000n;

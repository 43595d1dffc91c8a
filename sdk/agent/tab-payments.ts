import type { OpenTabAnswer } from "../client/facilitator-client.js";
import { grossForNet } from "../fees/relay-fee.js";
import { changeNoteOf } from "../note/note.js";
import { BatchSettlementRequirementSchema, type BatchSettlementRequirement } from "../x402/batch-settlement.js";
import type { PaymentRequired, ResourceInfo } from "../x402/index.js";
import { spentNothing, type AgentWallet } from "./agent-wallet.js";
import { X402AgentError } from "./errors.js";
import type { NoteReservation, NoteStore, StoredPresentation } from "./note-reservation.js";
import { PrivateTabs, tabTermsProblem, type OpenTab, type TabOptions, type TabPayment } from "./private-tab.js";
import type { TabStore } from "./tab-record.js";

/** How long after a tab's opening was sent a process that ended before its answer sends the same opening again. */
const OPENING_RESUMABLE_MS = 3_600_000;

/** The vault's key of a tab's opening: its channel salt, new for every tab. */
const openingRequest = (salt: string) => `open-tab ${salt.toLowerCase()}`;

/**
 * The agent's private tabs on sellers that offer x402's `batch-settlement` (docs/sdk.md, "Private tab"): one proof of
 * a deposit opens a tab (openTab, relayed by open-tab), and every later request is a voucher of the tab's own key
 * (PrivateTabs). Needs the wallet's `tabs` option and notes that keep tabs (a NoteVault).
 */
export class TabPayments {
  private readonly tabs: PrivateTabs;

  constructor(
    private readonly wallet: AgentWallet,
    private readonly options: TabOptions,
  ) {
    const { notes } = wallet.options;
    if (!isTabStore(notes)) throw new TypeError("X402Agent: `tabs` needs `notes` that keep tabs (a NoteVault)");
    this.tabs = new PrivateTabs({ store: notes, options, open: (request) => this.openTab(request) });
  }

  /**
   * The seller's `batch-settlement` entry in the facilitator's USDC on its chain, on terms the agent opens a tab on
   * (TabOptions.maxWithdrawDelaySeconds); undefined when the 402 offers none.
   */
  entryOf(required: PaymentRequired): BatchSettlementRequirement | undefined {
    if (required.x402Version !== 2) return undefined;
    const { chainId, asset } = this.wallet.options.network;
    for (const entry of required.accepts) {
      const parsed = BatchSettlementRequirementSchema.safeParse(entry);
      // A tab on terms the agent does not open is no way to pay: another entry of the 402 may be.
      if (!parsed.success || tabTermsProblem(parsed.data, this.options) !== undefined) continue;
      if (parsed.data.network === `eip155:${chainId}` && parsed.data.asset.toLowerCase() === asset.toLowerCase()) return parsed.data;
    }
    return undefined;
  }

  /** Pays the request on the agent's tab with the seller: a voucher, or the opening of a tab first when none holds the price. */
  async pay(url: string, init: RequestInit, accepted: BatchSettlementRequirement, resource: ResourceInfo, maxPaymentAtomic?: bigint): Promise<Response> {
    return this.within(url, accepted, maxPaymentAtomic).pay({ url, init, accepted, resource });
  }

  /** The payment of one request on the agent's tab, for a client that sends it itself; the caller hands the seller's answer to its `answered`. */
  async prepare(url: string, accepted: BatchSettlementRequirement, maxPaymentAtomic?: bigint): Promise<TabPayment> {
    return this.within(url, accepted, maxPaymentAtomic).prepare(accepted);
  }

  /** The agent's tabs, once the price of a request of `accepted` is within the caps. */
  private within(url: string, accepted: BatchSettlementRequirement, maxPaymentAtomic?: bigint): PrivateTabs {
    this.wallet.emit({ step: "payment-required", url, x402Version: 2, amount: accepted.amount, payTo: accepted.payTo, network: accepted.network });
    this.wallet.checkPrice(url, BigInt(accepted.amount), maxPaymentAtomic);
    return this.tabs;
  }

  /**
   * Opens a tab: the agent proves the relay of its deposit into the channel against a quote-tab quote (the proof binds
   * the channel, whose payer is the note's TabPayer, and the tab's lifetime) and open-tab relays it; the relay itself
   * funds the channel. The deposit plus the take leaves a note, counted against the budget as any payment. Only the
   * agent proves a tab's opening.
   */
  private async openTab({ accepted, payerAuthorizer, salt, depositAtomic, reclaimableAfter }: Parameters<OpenTab>[0]): Promise<OpenTabAnswer> {
    const { wallet } = this;
    const { facilitator, notes, acceptNotPrivate } = wallet.options;
    // The same tab's opening, sent by a process that ended before its answer: the facilitator answers it again from
    // the note's lease, with no second relay or take.
    const resumed = await notes.resume?.(openingRequest(salt));
    if (resumed !== undefined) return this.resumeOpening(resumed);
    const terms = await wallet.terms();
    const processooor = terms.provenThrough;
    if (processooor === undefined) {
      throw new X402AgentError("NON_CUSTODIAL_UNAVAILABLE", `${facilitator.url} does not relay this agent's proofs, and a private tab is opened by the agent's own proof. Nothing was paid.`);
    }
    const gross = grossForNet(depositAtomic, terms.takeBps);
    const depositAmount = depositAtomic.toString();
    const fields = { accepts: accepted, payerAuthorizer, salt, depositAmount, reclaimableAfter: Number(reclaimableAfter), acceptNotPrivate: acceptNotPrivate ?? false, ...wallet.agentFields() };
    const expected = { route: "open-tab", withdrawnValue: gross, feeBps: terms.takeBps, processooor, tab: { accepted, payerAuthorizer, salt, reclaimableAfter } } as const;
    return wallet.payFromNotes<OpenTabAnswer>(
      gross,
      async (note) => {
        const { body, change } = await wallet.proveSpend(note, expected, fields);
        const presentation = { request: openingRequest(salt), headers: { body: JSON.stringify(body) }, withdrawnValue: gross };
        return { send: () => facilitator.openTab(body), changeNote: () => change, hold: { untilMs: Date.now() + OPENING_RESUMABLE_MS, presentation } };
      },
      (opened) => BigInt(opened.gross),
    );
  }

  /** Sends again the opening a process that ended kept with its note, and ends the note's reservation by its answer. */
  private async resumeOpening({ reservation, presentation }: { reservation: NoteReservation; presentation: StoredPresentation }): Promise<OpenTabAnswer> {
    // What the earlier process's opening takes counts against this one's budget.
    const uncount = this.wallet.count(presentation.withdrawnValue);
    let answer: OpenTabAnswer;
    try {
      answer = await this.wallet.untilSettled(() => this.wallet.options.facilitator.openTab(JSON.parse(presentation.headers.body!) as Record<string, unknown>));
    } catch (error) {
      // Refused, the opening was never relayed (a relayed one is answered from its lease): the note is free, and the
      // tab is opened afresh. Anything else leaves the note to reconcile.
      const freed = spentNothing(error);
      if (freed) uncount();
      await (freed ? reservation.released() : reservation.unsettled());
      throw error;
    }
    const change = changeNoteOf(reservation.note, presentation.withdrawnValue);
    await reservation.spent(change.value > 0n ? change : undefined);
    return answer;
  }
}

function isTabStore(notes: NoteStore): notes is NoteStore & TabStore {
  return typeof (notes as Partial<TabStore>).tab === "function" && typeof (notes as Partial<TabStore>).saveTab === "function";
}

import type { WithdrawProof } from "../../sdk/index.js";
import { tabChannelOf, type BatchSettlementRequirement, type ChannelConfig } from "../../sdk/x402/batch-settlement.js";
import type { ProvenSpendResult } from "../buyer/facilitator.js";
import { RelayerError } from "../errors.js";
import type { SignedQuote } from "../settlement/quote.js";
import type { TabOpeningTerms } from "../settlement/spend.js";
import { PaymentPreflight, type PayerOrder, type PayerTerms } from "./payment-preflight.js";
import type { X402SettlerDeps } from "./settle-x402.js";
import { encodeTabLeasePayment } from "./tab-lease.js";

/** What quote-tab and open-tab name besides the note or the proof: the seller's entry, the channel's agent side, the deposit. */
export interface TabTerms extends PayerTerms<BatchSettlementRequirement> {
  /** The address of the key the agent made for the tab: the channel's payerAuthorizer, which signs its vouchers. */
  payerAuthorizer: string;
  /** The channel's salt, the agent's. */
  salt: string;
  /** What the tab holds: the relay's deposit into the channel. */
  deposit: bigint;
  /** When the tab's lifetime ends (unix seconds): from then on anyone may take back what its seller left. */
  reclaimableAfter: bigint;
}

export interface TabQuoteRequest extends TabTerms {
  nullifierHash: bigint;
}

export interface TabOpenRequest extends TabTerms {
  quote: SignedQuote;
  proof: WithdrawProof;
  /** As settle-x402-proof's: random bytes of the agent's that a retry must repeat. */
  retryKey: string;
}

/** The channel a tab's quote binds: its payer is the note's TabPayer. */
export interface TabChannel {
  payer: string;
  channelConfig: ChannelConfig;
  channelId: string;
  reclaimableAfter: bigint;
}

export interface TabQuote extends TabChannel {
  quote: SignedQuote;
}

export type OpenedTab = ProvenSpendResult & TabChannel;

export type TabOpenerDeps = X402SettlerDeps;

/** The longest lifetime a tab may bind: what its seller leaves stays in its channel until then. */
const MAX_TAB_LIFETIME_SECONDS = 30 * 86_400;

const NOTHING_SPENT = "Nothing was spent.";

/**
 * A private tab's relayer side (docs/design.md 13, docs/x402-interop.md "Private tab"): quote-tab quotes the relay of
 * the deposit into the channel the agent asked for, whose payer is the note's TabPayer (Entrypoint.tabPayerOf), so the
 * agent's proof binds the channel (seller, authorizer, token, delay, the tab's voucher key and salt) and its lifetime;
 * open-tab relays that proof as settle-x402-proof does, under the note's lease, and the relay itself deposits into the
 * channel (Entrypoint's TabOpening). No key of this relayer's signs anything of the tab: what the channel gives back
 * reaches the TabPayer only, and leaves it only into the pool as the agent's refund note.
 */
export class TabOpener {
  private readonly preflights: PaymentPreflight;

  constructor(private readonly deps: TabOpenerDeps) {
    this.preflights = new PaymentPreflight(deps);
  }

  async quote(request: TabQuoteRequest): Promise<TabQuote> {
    const order = await this.preflight(request);
    const channel = await this.channelOf(request, order, request.nullifierHash);
    const quote = await this.deps.facilitator.issueQuote({
      route: "open-tab",
      nullifierHash: request.nullifierHash,
      recipient: channel.payer,
      amount: order.gross,
      tab: tabOpeningOf(channel),
    });
    return { ...channel, quote };
  }

  /**
   * The relay of the agent's proof of a quote-tab quote, once the request derives exactly the quoted tab: a request
   * naming another channel, seller or lifetime binds another context, which the quote and the proof do not.
   */
  async open(request: TabOpenRequest): Promise<OpenedTab> {
    const { facilitator } = this.deps;
    const order = await this.preflight(request);
    const { quote } = request;
    const { nullifierHash } = quote;
    if (quote.route !== "open-tab") {
      throw new RelayerError("INVALID_REQUEST", `quote: not a quote-tab quote (it is for ${quote.route}). Ask quote-tab for one and prove against it. ${NOTHING_SPENT}`);
    }
    await this.deps.accessFee.assertAuthorized(nullifierHash);
    const channel = await this.channelOf(request, order, nullifierHash);
    const tab = tabOpeningOf(channel);
    const result = await facilitator.spendProven(quote, request.proof, {
      route: "open-tab",
      amount: order.gross,
      recipient: channel.payer,
      tab,
      // The retry key is in no transaction: a retry must be the agent's, not a reader of the relay's calldata.
      terms: [...order.terms, channel.channelId, channel.reclaimableAfter, request.retryKey],
      buildPayment: async () => ({
        xPayment: encodeTabLeasePayment({ channelId: channel.channelId, channelConfig: channel.channelConfig, reclaimableAfter: Number(channel.reclaimableAfter) }),
        // The sweep looks at a tab from its opening on: its seller may refund the rest at any time.
        validBefore: 0,
        nonce: channel.channelId,
      }),
    });
    await facilitator.recordSpend({ nullifierHash, amount: order.sellerAmount, agentId: request.agentId }, result.replayed);
    return { ...result, ...channel };
  }

  /** The pre-flight of every payer's payment (payment-preflight.ts), of the deposit; a deposit must cover one request. */
  private async preflight(request: TabTerms): Promise<PayerOrder<BatchSettlementRequirement>> {
    const price = BigInt(request.accepted.amount);
    if (request.deposit < price) {
      throw new RelayerError(
        "INVALID_PAYMENT_AMOUNT",
        `deposit ${request.deposit} is less than the seller's price of one request, ${price}: the tab could pay nothing. ${NOTHING_SPENT}`,
      );
    }
    const { wall } = await this.preflights.clocks();
    if (request.reclaimableAfter <= BigInt(Math.ceil(wall)) || request.reclaimableAfter > BigInt(Math.floor(wall) + MAX_TAB_LIFETIME_SECONDS)) {
      throw new RelayerError(
        "INVALID_REQUEST",
        `reclaimableAfter ${request.reclaimableAfter} is not within the next ${MAX_TAB_LIFETIME_SECONDS} s: a tab's lifetime ends in the future, and at most 30 days ahead. ${NOTHING_SPENT}`,
      );
    }
    return this.preflights.order("tab", request, request.deposit);
  }

  private async channelOf(request: TabTerms, order: PayerOrder<BatchSettlementRequirement>, nullifierHash: bigint): Promise<TabChannel> {
    const { chain } = this.deps;
    const payer = await chain.call(() => chain.entrypoint.tabPayerOf(nullifierHash));
    const { channelConfig, channelId } = tabChannelOf({ accepted: order.accepted, payer, payerAuthorizer: request.payerAuthorizer, salt: request.salt });
    return { payer, channelConfig, channelId, reclaimableAfter: request.reclaimableAfter };
  }
}

/** The TabOpening terms of `channel`. */
function tabOpeningOf({ channelConfig, channelId, reclaimableAfter }: TabChannel): TabOpeningTerms {
  return { channel: channelConfig, channelId, reclaimableAfter };
}

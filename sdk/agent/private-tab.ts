import { encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN, voucherTypes, type ClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, getChannel, updateChannelFromSettle, type ChannelSettleLocal } from "@x402/evm/batch-settlement/client";
import { FileClientChannelStorage } from "@x402/evm/batch-settlement/client/file-storage";
import { getAddress, hexlify, randomBytes, verifyTypedData, Wallet, type TypedDataField } from "ethers";
import type { OpenTabAnswer } from "../client/facilitator-client.js";
import { tabChannelOf, WITHDRAW_DELAY_SECONDS, type BatchSettlementRequirement } from "../x402/batch-settlement.js";
import type { ResourceInfo } from "../x402/index.js";
import { chainIdOfNetwork } from "../x402/networks.js";
import { X402AgentError } from "./errors.js";
import { fetchSameOrigin } from "./same-origin-fetch.js";
import { answerOf, correctiveStateOf, CUMULATIVE_AMOUNT_MISMATCH, type TabAnswer } from "./tab-answers.js";
import { tabSellerOf, type StoredTab, type TabStore } from "./tab-record.js";

export { tabAnswerOf, type TabAnswer } from "./tab-answers.js";

/** X402Agent's `tabs` option: pay sellers that offer x402's `batch-settlement` through private tabs (docs/sdk.md, "Private tab"). */
export interface TabOptions {
  /** Where @x402/evm's FileClientChannelStorage keeps each tab's running totals (public data; the tab's key is in the vault). */
  channelDirectory: string;
  /** What a new tab holds, atomic USDC (the take comes on top); counted in full against budgetAtomic when it opens. Default 0.95 USDC. */
  depositAtomic?: bigint;
  /** How long the agent pays with one tab before it opens another, seconds. Default 1 day. */
  lifetimeSeconds?: number;
  /**
   * The longest withdraw delay of a seller's channel the agent opens a tab on, seconds: what the seller leaves
   * unclaimed stays in the channel that long after a withdrawal starts. Default 1 day (the entrypoint allows up to 7).
   */
  maxWithdrawDelaySeconds?: number;
}

/**
 * The default deposit of a tab: 0.95 USDC, nine requests at the default maxPaymentAtomic, hundreds at API prices.
 * With the 500 bps take its opening withdraws 999999 atomic USDC, under the pool's 1 USDC minimum deposit, so every
 * depositor of the anonymity set could have funded it (docs/design.md 9).
 */
export const DEFAULT_TAB_DEPOSIT_ATOMIC = 950_000n;

/** The longest withdraw delay a tab accepts by default: one day. */
export const DEFAULT_TAB_MAX_WITHDRAW_DELAY_SECONDS = 86_400;

/** Why the agent opens no tab on `accepted` (its withdraw delay above the agent's cap), or undefined when it may. */
export function tabTermsProblem(accepted: BatchSettlementRequirement, options: TabOptions): string | undefined {
  const delay = accepted.extra.withdrawDelay ?? WITHDRAW_DELAY_SECONDS.minimum;
  const cap = options.maxWithdrawDelaySeconds ?? DEFAULT_TAB_MAX_WITHDRAW_DELAY_SECONDS;
  return delay <= cap ? undefined : `its channel's withdrawDelay of ${delay} s is above the agent's maxWithdrawDelaySeconds (${cap} s): what the seller leaves unclaimed would stay locked that long`;
}

/**
 * The default lifetime of a tab: one day. What the seller did not claim comes back as the agent's refund note once
 * its channel gives it back, and at the latest one withdraw delay after the tab is reclaimable (docs/design.md 13).
 */
export const DEFAULT_TAB_LIFETIME_SECONDS = 86_400;

/**
 * How long after the agent stops paying on a tab anyone may take it back (its proof's reclaimableAfter): the seller's
 * time to claim its last vouchers, which it also has during the channel's withdraw delay after.
 */
export const TAB_CLAIM_GRACE_SECONDS = 3_600;

/** When anyone may take `tab` back: its lifetime from its making, plus the seller's grace. Fixed by the tab, so a resent opening names the same. */
export function reclaimableAfterOf(tab: Pick<StoredTab, "createdAt">, options: Pick<TabOptions, "lifetimeSeconds">): bigint {
  return BigInt(Math.floor(tab.createdAt / 1000) + (options.lifetimeSeconds ?? DEFAULT_TAB_LIFETIME_SECONDS) + TAB_CLAIM_GRACE_SECONDS);
}

/** What a tab's opening needs from the agent: a proof of its deposit out of a note, relayed by open-tab. */
export type OpenTab = (request: {
  accepted: BatchSettlementRequirement;
  payerAuthorizer: string;
  salt: string;
  depositAtomic: bigint;
  reclaimableAfter: bigint;
}) => Promise<OpenTabAnswer>;

/** A paid request on a tab: the seller's entry and resource from its 402, and the request itself. */
export interface TabRequest {
  url: string;
  init: RequestInit;
  accepted: BatchSettlementRequirement;
  resource: ResourceInfo;
}

/** One request's payment on a tab, until the seller answers it. */
export interface TabPayment {
  /** The x402 payload: a voucher of the tab's key. */
  payload: PaymentPayload["payload"];
  /**
   * Records the seller's answer: the running total moves when it took the payment; an outage (the seller's facilitator
   * could not read or reach the chain, or the channel is busy) leaves the payment unanswered, to be sent again.
   */
  answered(answer: TabAnswer): Promise<void>;
  /**
   * Whether the request is paid again, once, after the seller refused this payment for a payment of an earlier
   * request it answered and the agent never saw answered (it stopped, or the answer was lost, between the seller's
   * answer and its record): the seller's corrective 402 names that payment's total, signed by the tab's own key.
   */
  recover(answer: TabAnswer): Promise<boolean>;
  /** Why a request `url` answered `status` (not 2xx) bought nothing; `reason`: the seller's, when it gave one. */
  refusal(url: string, status: number, reason?: string): X402AgentError;
}

/**
 * What @x402/evm's batch-settlement answers when the seller or its facilitator could not decide (the chain unread or
 * unreached, the channel held by a request in flight): no refusal, the same payment is sent again.
 */
const OUTAGE_REASONS: ReadonlySet<string> = new Set([
  "invalid_batch_settlement_evm_rpc_read_failed",
  "invalid_batch_settlement_evm_verification_state_unavailable",
  "invalid_batch_settlement_evm_channel_busy",
]);

/**
 * How @x402/core's seller names a 5xx of its facilitator (HTTPFacilitatorClient): the facilitator failed (its chain
 * unreachable, say) and decided nothing.
 */
const FACILITATOR_FAILED = /^Facilitator (verify|settle) failed \(5\d\d\)/;

/**
 * The agent's private tabs (docs/design.md 13): one per seller, opened by one proof whose relay deposits into its
 * channel, then every request a voucher of the tab's own key through @x402/evm's client scheme, which never signs a
 * deposit. A tab's requests go one at a time (the seller serves one per channel at a time). The tab's key and channel
 * are kept in the TabStore and the running totals in @x402/evm's file storage, so a restarted agent keeps paying on its
 * tab.
 */
export class PrivateTabs {
  private readonly storage: FileClientChannelStorage;
  /** Each seller's requests in turn, the opening of its tab included: the last one queued. */
  private readonly turns = new Map<string, Promise<unknown>>();

  constructor(
    private readonly deps: { store: TabStore; options: TabOptions; open: OpenTab },
  ) {
    this.storage = new FileClientChannelStorage({ directory: deps.options.channelDirectory });
  }

  /** Pays `request` on the agent's tab with its seller, opening a tab when none can pay it; one request per seller at a time. */
  pay(request: TabRequest): Promise<Response> {
    return this.inTurn(tabSellerOf(request.accepted), async () => {
      let payment = await this.paymentNow(request.accepted);
      let response = await sendOrLost(request, payment.payload);
      let answer = answerOf(response);
      if (!response.ok && (await payment.recover(answer))) {
        payment = await this.paymentNow(request.accepted);
        response = await sendOrLost(request, payment.payload);
        answer = answerOf(response);
      }
      await payment.answered(answer);
      if (!response.ok) throw payment.refusal(request.url, response.status, answer.reason);
      return response;
    });
  }

  /**
   * The payment of one request of `accepted`'s price on the agent's tab with its seller, opening a tab when none can
   * pay it (in turn with the seller's other payments: concurrent ones never open a tab each). The caller sends it and
   * hands the seller's answer to `answered` before the tab's next payment.
   */
  prepare(accepted: BatchSettlementRequirement): Promise<TabPayment> {
    return this.inTurn(tabSellerOf(accepted), () => this.paymentNow(accepted));
  }

  /** Runs `work` once the seller's work queued before it is done. */
  private inTurn<T>(seller: string, work: () => Promise<T>): Promise<T> {
    const turn = (this.turns.get(seller) ?? Promise.resolve()).then(work);
    this.turns.set(seller, turn.catch(() => undefined));
    return turn;
  }

  private async paymentNow(accepted: BatchSettlementRequirement): Promise<TabPayment> {
    const problem = tabTermsProblem(accepted, this.deps.options);
    if (problem !== undefined) throw new X402AgentError("NO_USABLE_ENTRY", `The seller at ${accepted.payTo} offers a tab the agent does not open: ${problem}. Nothing was paid.`);
    const seller = tabSellerOf(accepted);
    const kept = await this.deps.store.tab(seller);
    const chosen = kept !== undefined && (await this.canPay(kept, BigInt(accepted.amount))) ? kept : await this.openTab(seller, accepted, kept?.opened === undefined ? kept : undefined);
    // A payment of an earlier request still unanswered: the one total a corrective 402 of this request may name.
    const { unanswered: earlier, ...settled } = chosen;
    const { channelId } = this.channelOf(settled, accepted);
    const local: ChannelSettleLocal = { channelId, requestAmount: accepted.amount };
    const payload = await this.voucherPayload(settled, accepted);
    const unanswered = { maxClaimableAmount: voucherTotalOf(payload) };
    // Kept before it is sent: a crash before the seller's answer is recorded leaves the tab marked.
    await this.deps.store.saveTab({ ...settled, unanswered });
    return {
      payload,
      answered: async ({ settle, reason, status }) => {
        if (settle?.success === true) {
          const { chargedAmount, channelState } = (settle.extra ?? {}) as { chargedAmount?: string; channelState?: { chargedCumulativeAmount?: string } };
          await updateChannelFromSettle(this.storage, { server: { chargedAmount, chargedCumulativeAmount: channelState?.chargedCumulativeAmount }, local });
          return this.deps.store.saveTab(settled);
        }
        if (isOutage({ reason, status })) return;
        await this.deps.store.saveTab(settled);
      },
      recover: async ({ required }) => required?.error === CUMULATIVE_AMOUNT_MISMATCH && this.resync(settled, earlier, accepted, required),
      refusal: (url, status, reason) => {
        const answered = `${url} answered a request paid on the private tab ${channelId} with ${status}${reason === undefined ? "" : ` (${reason})`}.`;
        if (isOutage({ reason, status })) {
          return new X402AgentError("TAB_SELLER_UNAVAILABLE", `${answered} The seller could not take the payment now: repeat the request, and the same payment is sent again.`);
        }
        return new X402AgentError("TAB_PAYMENT_REFUSED", `${answered} The voucher bought nothing.`);
      },
    };
  }

  /**
   * TabPayment.recover for a corrective 402: the seller's corrective 402 names its running total and the voucher of the tab's key it holds
   * for it. The agent takes it only for the payment of an earlier request it sent and never saw answered (`earlier`,
   * the tab's durable mark): the voucher the seller holds must be that one, so the seller answered it (served it, or
   * it is the seller's loss to claim) and, for a deposit, took the deposit. A corrective 402 naming the voucher of the
   * request in flight, a second one, or any other (another reason, another channel, a signature of another key, a
   * total above what was signed or the deposit) moves nothing.
   */
  private async resync(tab: StoredTab, earlier: StoredTab["unanswered"], accepted: BatchSettlementRequirement, required: PaymentRequired): Promise<boolean> {
    const corrective = correctiveStateOf(required);
    if (corrective === undefined || earlier === undefined) return false;
    const { channelId } = this.channelOf(tab, accepted);
    const { charged, signed, signature, totalClaimed } = corrective;
    if (signed !== BigInt(earlier.maxClaimableAmount) || charged > signed || signed > BigInt(tab.opened!.depositAmount)) return false;
    // The voucher is checked on this tab's channel: one the key signed for another channel does not verify here.
    const domain = { ...BATCH_SETTLEMENT_DOMAIN, chainId: chainIdOfNetwork(accepted.network), verifyingContract: BATCH_SETTLEMENT_ADDRESS };
    let signer: string;
    try {
      signer = verifyTypedData(domain, { Voucher: [...voucherTypes.Voucher] }, { channelId, maxClaimableAmount: signed }, signature);
    } catch {
      return false;
    }
    if (getAddress(signer) !== new Wallet(tab.tabKey).address) return false;
    await this.storage.set(channelId.toLowerCase(), {
      chargedCumulativeAmount: charged.toString(),
      signedMaxClaimable: signed.toString(),
      signature: signature as `0x${string}`,
      // The agent's own deposit, whatever the seller says the channel holds: its vouchers never go beyond it.
      balance: tab.opened!.depositAmount,
      totalClaimed: (totalClaimed ?? 0n).toString(),
    });
    // The mark is spent: the request is paid again once, and a second corrective 402 finds none.
    await this.deps.store.saveTab(tab);
    return true;
  }

  /** Whether `tab` can pay `price` now: opened, within its lifetime, and holding the price. */
  private async canPay(tab: StoredTab, price: bigint): Promise<boolean> {
    const { opened } = tab;
    const lifetimeMs = (this.deps.options.lifetimeSeconds ?? DEFAULT_TAB_LIFETIME_SECONDS) * 1000;
    if (opened === undefined || Date.now() > tab.createdAt + lifetimeMs) return false;
    const channel = await getChannel(this.storage, opened.channelId);
    return channel !== undefined && BigInt(channel.balance ?? "0") - BigInt(channel.chargedCumulativeAmount ?? "0") >= price;
  }

  /**
   * A new tab, or `unopened`: its key and salt are kept before the facilitator opens it (a tab opened for a key the
   * agent lost could never be paid from), then the channel it opened, once checked to be the one the agent asked for.
   */
  private async openTab(seller: string, accepted: BatchSettlementRequirement, unopened: StoredTab | undefined): Promise<StoredTab> {
    // A tab kept without its channel is opened again under its own key and salt: an opening of it sent before and
    // never answered is answered again (its proof kept with its note), never relayed a second time.
    const tab: StoredTab = unopened ?? { seller, tabKey: hexlify(randomBytes(32)), salt: hexlify(randomBytes(32)), createdAt: Date.now() };
    const tabKey = new Wallet(tab.tabKey);
    if (unopened === undefined) await this.deps.store.saveTab(tab);
    const depositAtomic = this.deps.options.depositAtomic ?? DEFAULT_TAB_DEPOSIT_ATOMIC;
    const reclaimableAfter = reclaimableAfterOf(tab, this.deps.options);
    const answer = await this.deps.open({ accepted, payerAuthorizer: tabKey.address, salt: tab.salt, depositAtomic, reclaimableAfter });
    const { channelId } = tabChannelOf({ accepted, payer: answer.payer, payerAuthorizer: tabKey.address, salt: tab.salt });
    const deposited = BigInt(answer.gross) - BigInt(answer.fee);
    if (channelId.toLowerCase() !== answer.channelId.toLowerCase() || deposited !== depositAtomic || BigInt(answer.reclaimableAfter) !== reclaimableAfter) {
      throw new X402AgentError(
        "QUOTE_REFUSED",
        `The facilitator opened channel ${answer.channelId} holding ${deposited}, reclaimable after ${answer.reclaimableAfter}, not the agent's ${channelId} ` +
          `holding ${depositAtomic}, reclaimable after ${reclaimableAfter}. The agent pays nothing on it.`,
      );
    }
    const depositAmount = deposited.toString();
    // The relay deposited into the channel before open-tab answered: the tab's first request is a voucher.
    await this.storage.set(channelId.toLowerCase(), { chargedCumulativeAmount: "0", balance: depositAmount, totalClaimed: "0" });
    const opened: StoredTab = { ...tab, opened: { payer: answer.payer, channelId, depositAmount, reclaimableAfter: Number(reclaimableAfter) } };
    await this.deps.store.saveTab(opened);
    return opened;
  }

  /** A request: a voucher of the running total plus the price, by @x402/evm's client scheme from the kept totals. */
  private async voucherPayload(tab: StoredTab, accepted: BatchSettlementRequirement): Promise<PaymentPayload["payload"]> {
    // The payer signs nothing: it is the note's TabPayer, a contract, and the relay made the tab's one deposit.
    const payer = tab.opened!.payer as `0x${string}`;
    const payerSigner: ClientEvmSigner = { address: payer, signTypedData: () => Promise.reject(new Error("a tab's payer signs no deposit")) };
    const scheme = new BatchSettlementEvmScheme(payerSigner, {
      voucherSigner: voucherSignerOf(tab),
      storage: this.storage,
      salt: tab.salt as `0x${string}`,
      depositStrategy: () => false,
    });
    return (await scheme.createPaymentPayload(2, accepted as unknown as PaymentRequirements)).payload;
  }

  private channelOf(tab: StoredTab, accepted: BatchSettlementRequirement) {
    return tabChannelOf({ accepted, payer: tab.opened!.payer, payerAuthorizer: new Wallet(tab.tabKey).address, salt: tab.salt });
  }
}

/** Sends the request with `payload` as its x402 v2 payment. */
function send({ url, init, accepted, resource }: TabRequest, payload: PaymentPayload["payload"]): Promise<Response> {
  const payment = { x402Version: 2, resource, accepted, payload } as unknown as PaymentPayload;
  const headers = new Headers(init.headers);
  headers.set("PAYMENT-SIGNATURE", encodePaymentSignatureHeader(payment));
  return fetchSameOrigin(url, { ...init, headers });
}

/** send, where a request that left and got no answer is TAB_ANSWER_LOST: its payment stays marked unanswered. */
async function sendOrLost(request: TabRequest, payload: PaymentPayload["payload"]): Promise<Response> {
  try {
    return await send(request, payload);
  } catch (error) {
    if (error instanceof X402AgentError) throw error;
    throw new X402AgentError(
      "TAB_ANSWER_LOST",
      `${request.url} gave no answer to a request paid on a private tab (${(error as Error).message}). The tab keeps the payment as unanswered: repeat the request, and it is paid from the same total.`,
    );
  }
}

/** The tab's key as @x402/evm's signer of its vouchers. */
function voucherSignerOf(tab: StoredTab): ClientEvmSigner {
  const wallet = new Wallet(tab.tabKey);
  return {
    address: wallet.address as `0x${string}`,
    signTypedData: async ({ domain, types, primaryType, message }) =>
      (await wallet.signTypedData(domain, { [primaryType]: types[primaryType] as TypedDataField[] }, message)) as `0x${string}`,
  };
}

/**
 * Whether the seller's answer to a tab payment is an outage, not a refusal: the payment stays unanswered and is sent
 * again. A 5xx without x402's reason is no answer either (the seller failed while it held the payment).
 */
function isOutage({ reason, status }: Pick<TabAnswer, "reason" | "status">): boolean {
  if (reason === undefined) return status !== undefined && status >= 500;
  return OUTAGE_REASONS.has(reason) || FACILITATOR_FAILED.test(reason);
}

/** The running total a tab payment's voucher signs. */
function voucherTotalOf(payload: PaymentPayload["payload"]): string {
  return String((payload as { voucher: { maxClaimableAmount: string } }).voucher.maxClaimableAmount);
}


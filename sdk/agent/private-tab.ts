import { encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN, voucherTypes, type ClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme, getChannel, signVoucher, updateChannelFromSettle, type ChannelSettleLocal } from "@x402/evm/batch-settlement/client";
import { FileClientChannelStorage } from "@x402/evm/batch-settlement/client/file-storage";
import { getAddress, hexlify, randomBytes, verifyTypedData, Wallet, type TypedDataField } from "ethers";
import type { OpenTabAnswer } from "../client/facilitator-client.js";
import { tabChannelOf, tabDepositAuthorization, tabDepositNonceOf, WITHDRAW_DELAY_SECONDS, type BatchSettlementRequirement } from "../x402/batch-settlement.js";
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
   * unclaimed stays in the channel that long after a withdrawal starts. Default 1 day (x402 allows up to 30).
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

/** The default lifetime of a tab: one day. What the seller did not claim comes back as the agent's refund note once its channel is drained (docs/design.md 13). */
export const DEFAULT_TAB_LIFETIME_SECONDS = 86_400;

/** The reference facilitators refuse an authorization whose validBefore is less than this far ahead. */
const DEPOSIT_MARGIN_SECONDS = 6;

/** What a tab's opening needs from the agent: a proof of its deposit out of a note, relayed by open-tab. */
export type OpenTab = (request: { accepted: BatchSettlementRequirement; payerAuthorizer: string; salt: string; depositAtomic: bigint }) => Promise<OpenTabAnswer>;

/** A paid request on a tab: the seller's entry and resource from its 402, and the request itself. */
export interface TabRequest {
  url: string;
  init: RequestInit;
  accepted: BatchSettlementRequirement;
  resource: ResourceInfo;
}

/** One request's payment on a tab, until the seller answers it. */
export interface TabPayment {
  /** The x402 payload: the tab's deposit with its first voucher, or a voucher. */
  payload: PaymentPayload["payload"];
  /**
   * Records the seller's answer: the running total moves when it took the payment; an outage (the seller's facilitator
   * could not read or reach the chain, or the channel is busy) leaves the payment unanswered, to be sent again.
   */
  answered(answer: TabAnswer): Promise<void>;
  /**
   * Whether the request is paid again, once, after the seller refused this payment for a payment of an earlier
   * request it answered and the agent never saw answered (it stopped, or the answer was lost, between the seller's
   * answer and its record): the seller's corrective 402 names that payment's total, signed by the tab's own key; or
   * the seller refused the tab's deposit sent again after the first one was lost (the seller stopped between the
   * deposit and its record of it): the deposit is on chain, and the request is paid with the first voucher alone.
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
  "invalid_batch_settlement_evm_deposit_transaction_failed",
]);

/**
 * @x402/evm's facilitator checks a deposit authorization's signature through the chain (a payer may be a contract),
 * and answers a failed read as a bad signature: an outage, for a signature the agent checks holds.
 */
const RECEIVE_AUTHORIZATION_SIGNATURE = "invalid_batch_settlement_evm_receive_authorization_signature";

/**
 * A seller that stopped between a deposit and its record keeps the channel's balance from before the deposit, and
 * refuses the first voucher against it until it reads the channel from the chain again: @x402/evm's seller does at
 * least every 5 minutes (its onchainStateTtlMs is at most that). Until then past the deposit's window, such a
 * refusal of a tab taken to hold its deposit is an outage; after it, the deposit is not on chain.
 */
const CUMULATIVE_EXCEEDS_BALANCE = "invalid_batch_settlement_evm_cumulative_exceeds_balance";
const SELLER_CHANNEL_TTL_SECONDS = 300;

/**
 * The agent's private tabs (docs/design.md 13): one per seller, opened by one proof of its deposit, then every
 * request a voucher of the tab's own key through @x402/evm's client scheme, which never signs a second deposit. A
 * tab's requests go one at a time (the seller serves one per channel at a time). The tab's key and channel are kept
 * in the TabStore and the running totals in @x402/evm's file storage, so a restarted agent keeps paying on its tab.
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
    const local: ChannelSettleLocal = { channelId, requestAmount: accepted.amount, ...(!settled.funded && { depositAmount: settled.opened!.deposit.amount }) };
    const payload = settled.funded ? await this.voucherPayload(settled, accepted) : await this.depositPayload(settled, accepted);
    const unanswered = { maxClaimableAmount: voucherTotalOf(payload) };
    const outage = (reason: string | undefined, status?: number) => isOutage(settled, accepted, { reason, status });
    // Kept before it is sent: a crash before the seller's answer is recorded leaves the tab marked.
    await this.deps.store.saveTab({ ...settled, unanswered });
    return {
      payload,
      answered: async ({ settle, reason, status }) => {
        if (settle?.success === true) {
          const { chargedAmount, channelState } = (settle.extra ?? {}) as { chargedAmount?: string; channelState?: { chargedCumulativeAmount?: string } };
          await updateChannelFromSettle(this.storage, { server: { chargedAmount, chargedCumulativeAmount: channelState?.chargedCumulativeAmount }, local });
          const { depositUnconfirmed: _, ...confirmed } = settled;
          await this.deps.store.saveTab({ ...confirmed, funded: true });
          return;
        }
        if (outage(reason, status)) return;
        if (settled.depositUnconfirmed !== true) return this.deps.store.saveTab(settled);
        // The deposit the tab was taken to hold is not on chain after all: the tab goes back to its deposit.
        const { depositUnconfirmed: _, ...unfunded } = settled;
        await this.storage.delete(channelId.toLowerCase());
        await this.deps.store.saveTab({ ...unfunded, funded: false });
      },
      recover: async ({ required, reason, status }) => {
        // A corrective 402 says the seller holds a record of the channel; any other refusal may be a seller that lost it.
        if (required?.error === CUMULATIVE_AMOUNT_MISMATCH) return this.resync(settled, earlier, accepted, required);
        return !outage(reason, status) && this.takeDepositAsMade(settled, earlier, unanswered);
      },
      refusal: (url, status, reason) => {
        const answered = `${url} answered a request paid on the private tab ${channelId} with ${status}${reason === undefined ? "" : ` (${reason})`}.`;
        if (outage(reason, status)) {
          return new X402AgentError("TAB_SELLER_UNAVAILABLE", `${answered} The seller could not take the payment now: repeat the request, and the same payment is sent again.`);
        }
        return new X402AgentError(
          "TAB_PAYMENT_REFUSED",
          `${answered} ` +
            (settled.funded
              ? "The voucher bought nothing."
              : "The seller did not take the tab's deposit: a deposit that never reaches the chain comes back into the pool as the agent's refund note after its window."),
        );
      },
    };
  }

  /**
   * TabPayment.recover for a refused deposit: when the same deposit (with the same first voucher) was sent before and
   * never answered, the seller may have made it and stopped before recording it. The tab is taken as holding it, until
   * a refusal of its first voucher says otherwise (`depositUnconfirmed`), and the request is paid with that voucher:
   * the seller's facilitator checks it against the channel on chain.
   */
  private async takeDepositAsMade(tab: StoredTab, earlier: StoredTab["unanswered"], sent: NonNullable<StoredTab["unanswered"]>): Promise<boolean> {
    if (tab.funded || earlier?.maxClaimableAmount !== sent.maxClaimableAmount) return false;
    await this.storage.set(tab.opened!.channelId.toLowerCase(), { chargedCumulativeAmount: "0", balance: tab.opened!.deposit.amount, totalClaimed: "0" });
    await this.deps.store.saveTab({ ...tab, funded: true, depositUnconfirmed: true });
    return true;
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
    if (signed !== BigInt(earlier.maxClaimableAmount) || charged > signed || signed > BigInt(tab.opened!.deposit.amount)) return false;
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
      balance: tab.opened!.deposit.amount,
      totalClaimed: (totalClaimed ?? 0n).toString(),
    });
    // The mark is spent: the request is paid again once, and a second corrective 402 finds none.
    await this.deps.store.saveTab({ ...tab, funded: true });
    return true;
  }

  /** Whether `tab` can pay `price` now: opened, within its lifetime, and holding the price (or its deposit still usable). */
  private async canPay(tab: StoredTab, price: bigint): Promise<boolean> {
    const { opened } = tab;
    const lifetimeMs = (this.deps.options.lifetimeSeconds ?? DEFAULT_TAB_LIFETIME_SECONDS) * 1000;
    if (opened === undefined || Date.now() > tab.createdAt + lifetimeMs) return false;
    if (!tab.funded) {
      const validBefore = depositWindowOf(tab);
      // A deposit sent and never answered may be on chain whatever its window: the tab pays on until the seller says not.
      const usable = tab.unanswered !== undefined || Date.now() / 1000 + DEPOSIT_MARGIN_SECONDS < validBefore;
      return usable && BigInt(opened.deposit.amount) >= price;
    }
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
    const tab: StoredTab = unopened ?? { seller, tabKey: hexlify(randomBytes(32)), salt: hexlify(randomBytes(32)), createdAt: Date.now(), funded: false };
    const tabKey = new Wallet(tab.tabKey);
    if (unopened === undefined) await this.deps.store.saveTab(tab);
    const depositAtomic = this.deps.options.depositAtomic ?? DEFAULT_TAB_DEPOSIT_ATOMIC;
    const answer = await this.deps.open({ accepted, payerAuthorizer: tabKey.address, salt: tab.salt, depositAtomic });
    const { channelId } = tabChannelOf({ accepted, payer: answer.payer, payerAuthorizer: tabKey.address, salt: tab.salt });
    if (channelId.toLowerCase() !== answer.channelId.toLowerCase() || BigInt(answer.deposit.amount) !== depositAtomic) {
      throw new X402AgentError(
        "QUOTE_REFUSED",
        `The facilitator opened channel ${answer.channelId} holding ${answer.deposit.amount}, not the agent's ${channelId} holding ${depositAtomic}. Its deposit cannot fund the agent's tab.`,
      );
    }
    const opened: StoredTab = { ...tab, opened: { payer: answer.payer, channelId, deposit: answer.deposit } };
    await this.deps.store.saveTab(opened);
    return opened;
  }

  /** The tab's first request: the deposit the facilitator authorized, with the first voucher. */
  private async depositPayload(tab: StoredTab, accepted: BatchSettlementRequirement): Promise<PaymentPayload["payload"]> {
    const { channelConfig, channelId } = this.channelOf(tab, accepted);
    const voucher = await signVoucher(voucherSignerOf(tab), channelId, accepted.amount, accepted.network);
    return { type: "deposit", channelConfig, voucher, deposit: tab.opened!.deposit };
  }

  /** A later request: a voucher of the running total plus the price, by @x402/evm's client scheme from the kept totals. */
  private async voucherPayload(tab: StoredTab, accepted: BatchSettlementRequirement): Promise<PaymentPayload["payload"]> {
    // The payer signs nothing here: its one deposit was the facilitator's to sign, and is made.
    const payer = tab.opened!.payer as `0x${string}`;
    const payerSigner: ClientEvmSigner = { address: payer, signTypedData: () => Promise.reject(new Error("a tab's payer signs no second deposit")) };
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
 * Whether the seller's answer to a payment on `tab` is an outage, not a refusal: the payment stays unanswered and is
 * sent again. A 5xx without x402's reason is no answer either (the seller failed while it held the payment).
 */
function isOutage(tab: StoredTab, accepted: BatchSettlementRequirement, { reason, status }: Pick<TabAnswer, "reason" | "status">): boolean {
  if (reason === undefined) return status !== undefined && status >= 500;
  if (OUTAGE_REASONS.has(reason)) return true;
  if (reason === RECEIVE_AUTHORIZATION_SIGNATURE) return !tab.funded && depositSignedByPayer(tab, accepted);
  if (reason === CUMULATIVE_EXCEEDS_BALANCE) return tab.depositUnconfirmed === true && Date.now() / 1000 < depositWindowOf(tab) + SELLER_CHANNEL_TTL_SECONDS;
  return false;
}

/** When the tab's deposit authorization stops being valid (unix seconds): no deposit of it reaches the chain after. */
function depositWindowOf(tab: StoredTab): number {
  return Number(tab.opened!.deposit.authorization.erc3009Authorization.validBefore);
}

/** Whether the tab's deposit authorization is its payer's own signature under the seller's token domain, checked here. */
function depositSignedByPayer(tab: StoredTab, accepted: BatchSettlementRequirement): boolean {
  const { payer, channelId, deposit } = tab.opened!;
  const authorization = deposit.authorization.erc3009Authorization;
  const { name, version } = accepted.extra as { name?: unknown; version?: unknown };
  if (typeof name !== "string" || typeof version !== "string" || authorization.validAfter !== "0") return false;
  const { types, message } = tabDepositAuthorization({
    payer,
    value: BigInt(deposit.amount),
    validBefore: BigInt(authorization.validBefore),
    nonce: tabDepositNonceOf(channelId, authorization.salt),
  });
  const domain = { name, version, chainId: chainIdOfNetwork(accepted.network), verifyingContract: accepted.asset };
  try {
    return getAddress(verifyTypedData(domain, types, message, authorization.signature)) === getAddress(payer);
  } catch {
    return false;
  }
}

/** The running total a tab payment's voucher signs. */
function voucherTotalOf(payload: PaymentPayload["payload"]): string {
  return String((payload as { voucher: { maxClaimableAmount: string } }).voucher.maxClaimableAmount);
}


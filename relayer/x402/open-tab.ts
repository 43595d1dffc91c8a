import type { WithdrawProof } from "../../sdk/index.js";
import {
  tabChannelOf,
  tabDepositAuthorization,
  tabDepositNonceOf,
  type BatchSettlementRequirement,
  type ChannelConfig,
  type TabDeposit,
} from "../../sdk/x402/batch-settlement.js";
import { hexlify, randomBytes, type Wallet } from "ethers";
import type { ProvenSpendResult } from "../buyer/facilitator.js";
import { RelayerError } from "../errors.js";
import { feeOf } from "../pricing/pricing.js";
import type { SignedQuote } from "../settlement/quote.js";
import type { SignedPayment } from "../store/relayer-store.js";
import { payerWallet } from "./payer-keys.js";
import { PaymentPreflight, payerWindow, type PayerOrder, type PayerTerms } from "./payment-preflight.js";
import type { X402SettlerDeps } from "./settle-x402.js";
import { encodeTabLeasePayment, tabLeasePaymentOf } from "./tab-lease.js";

/** What quote-tab and open-tab name besides the note or the proof: the seller's entry, the channel's agent side, the deposit. */
export interface TabTerms extends PayerTerms<BatchSettlementRequirement> {
  /** The address of the key the agent made for the tab: the channel's payerAuthorizer, which signs its vouchers. */
  payerAuthorizer: string;
  /** The channel's salt, the agent's. */
  salt: string;
  /** What the tab holds: the payer's deposit into the channel. */
  deposit: bigint;
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

/** The channel a tab's quote binds, and the deposit's salt and window. */
export interface TabChannel {
  payer: string;
  channelConfig: ChannelConfig;
  channelId: string;
  depositSalt: string;
  validBefore: bigint;
}

export interface TabQuote extends TabChannel {
  quote: SignedQuote;
}

export interface OpenedTab extends ProvenSpendResult, Omit<TabChannel, "depositSalt" | "validBefore"> {
  /** The deposit half of the tab's first payment: the payer's authorization, signed by the relayer. */
  deposit: TabDeposit;
}

export type TabOpenerDeps = X402SettlerDeps;

const NOTHING_SPENT = "Nothing was spent.";

/**
 * A private tab's relayer side (docs/design.md 13, docs/x402-interop.md "Private tab"): quote-tab quotes the relay of
 * the deposit to a single-use payer with the channel's deposit nonce as the payment nonce, so the agent's proof binds
 * the channel (seller, authorizer, token, delay, the tab's voucher key and salt); open-tab relays that proof as
 * settle-x402-proof does, under the note's lease, and answers the payer's one ERC-3009 authorization of the payout
 * to x402's deposit collector. The authorization is signed before the lease is taken, as settle-x402's payment is,
 * and kept with the lease: a retry of the same request is answered the same signature and moves nothing.
 */
export class TabOpener {
  private readonly preflights: PaymentPreflight;

  constructor(private readonly deps: TabOpenerDeps) {
    this.preflights = new PaymentPreflight(deps);
  }

  async quote(request: TabQuoteRequest): Promise<TabQuote> {
    const order = await this.preflight(request);
    const depositSalt = hexlify(randomBytes(32));
    const { validBefore } = payerWindow(order.accepted, await this.preflights.clocks());
    const channel = this.channelOf(request, order, request.nullifierHash, depositSalt, validBefore);
    const quote = await this.deps.facilitator.issueQuote({
      route: "open-tab",
      nullifierHash: request.nullifierHash,
      recipient: channel.payer,
      amount: order.gross,
      payment: { nonce: tabDepositNonceOf(channel.channelId, depositSalt), salt: depositSalt, validAfter: 0n, validBefore },
    });
    return { ...channel, quote };
  }

  /**
   * The relay of the agent's proof of a quote-tab quote, once the request derives exactly the quoted payment: a
   * request naming another channel or seller derives another nonce, which the quote and the proof do not bind.
   */
  async open(request: TabOpenRequest): Promise<OpenedTab> {
    const { facilitator } = this.deps;
    const order = await this.preflight(request);
    const { quote } = request;
    const { nullifierHash, paymentSalt, paymentValidBefore } = quote;
    if (quote.route !== "open-tab" || paymentSalt === undefined || paymentValidBefore === undefined) {
      throw new RelayerError("INVALID_REQUEST", `quote: not a quote-tab quote (it is for ${quote.route}). Ask quote-tab for one and prove against it. ${NOTHING_SPENT}`);
    }
    const payout = order.gross - feeOf(order.gross, facilitator.takeBps);
    await this.deps.accessFee.assertAuthorized(nullifierHash);
    const channel = this.channelOf(request, order, nullifierHash, paymentSalt, BigInt(paymentValidBefore));
    const payer = payerWallet(this.deps.payerKeySecret, nullifierHash);
    const nonce = tabDepositNonceOf(channel.channelId, paymentSalt);
    const result = await facilitator.spendProven(quote, request.proof, {
      route: "open-tab",
      amount: order.gross,
      recipient: payer.address,
      payment: { nonce, validBefore: channel.validBefore },
      // The retry key is in no transaction: a retry must be the agent's, not a reader of the relay's calldata.
      terms: [...order.terms, channel.channelId, request.retryKey],
      buildPayment: () => this.signDeposit(payer, { channel, value: payout, nonce, depositSalt: paymentSalt }),
    });
    await facilitator.recordSpend({ nullifierHash, amount: order.sellerAmount, agentId: request.agentId }, result.replayed);
    const { channelConfig, channelId } = channel;
    return { ...result, payer: payer.address, channelConfig, channelId, deposit: tabLeasePaymentOf(result.lease.payment!.xPayment)!.deposit };
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
    return this.preflights.order("tab", request, request.deposit);
  }

  private channelOf(request: TabTerms, order: PayerOrder<BatchSettlementRequirement>, nullifierHash: bigint, depositSalt: string, validBefore: bigint): TabChannel {
    const payer = payerWallet(this.deps.payerKeySecret, nullifierHash).address;
    const { channelConfig, channelId } = tabChannelOf({ accepted: order.accepted, payer, payerAuthorizer: request.payerAuthorizer, salt: request.salt });
    return { payer, channelConfig, channelId, depositSalt, validBefore };
  }

  /** The payer's ReceiveWithAuthorization of the payout to the deposit collector, under the token's own domain. */
  private async signDeposit(
    payer: Wallet,
    { channel, value, nonce, depositSalt }: { channel: TabChannel; value: bigint; nonce: string; depositSalt: string },
  ): Promise<SignedPayment> {
    const { channelId, channelConfig, validBefore } = channel;
    const { chain } = this.deps;
    const { name, version } = await this.preflights.token.read();
    const { types, message } = tabDepositAuthorization({ payer: payer.address, value, validBefore, nonce });
    const signature = await payer.signTypedData({ name, version, chainId: chain.deployment.chainId, verifyingContract: chain.deployment.usdc }, types, message);
    const deposit: TabDeposit = {
      amount: value.toString(),
      authorization: { erc3009Authorization: { validAfter: "0", validBefore: validBefore.toString(), salt: depositSalt, signature } },
    };
    return { xPayment: encodeTabLeasePayment({ channelId, channelConfig, deposit }), validBefore: Number(validBefore), nonce };
  }
}

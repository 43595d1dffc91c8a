import { nullifierHashOf, precommitmentOf, deriveRefundSecrets, type Note, type NoteSecrets } from "../../sdk/index.js";
import {
  amountOf,
  authorizationSignerUnder,
  buildPaymentPayload,
  encodeXPayment,
  validityWindow,
  x402VersionOf,
  type ResourceInfo,
} from "../../x402/index.js";
import type { AccessFeeGate } from "../access-fee.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";
import type { Facilitator, SpendResult } from "../facilitator.js";
import { grossForNet } from "../pricing.js";
import { isPrivate, privacyBlock } from "../privacy.js";
import type { SellerEntry } from "../schemas/settle-x402.js";
import { payerWallet } from "./payer-keys.js";
import { SellerTermsCheck, type PaymentWindow } from "./seller-terms.js";
import { TokenDomainReader } from "./token-domain.js";

export interface X402SettleRequest {
  /** The seller's `exact` entry, as its 402 gave it (v1 or v2 shape). */
  accepted: SellerEntry;
  /** The v2 402's `resource`, echoed in a v2 payment. */
  resource?: ResourceInfo;
  note: Note;
  /** Change-note secrets; derived from the spent note when absent (docs/design.md 2). */
  changeSecrets?: NoteSecrets;
  acceptNotPrivate: boolean;
  agentId?: string;
  category?: string;
}

export interface X402Settlement extends SpendResult {
  xPayment: string;
  x402Version: 1 | 2;
  /** The single-use payer the withdrawal funded; it holds exactly the seller's amount. */
  payer: string;
  /** The seller's amount (the payer's authorization); `amount` is the gross that left the pool. */
  sellerAmount: bigint;
  validBefore: number;
}

export interface X402SettlerDeps {
  facilitator: Facilitator;
  chain: PoolChain;
  accessFee: AccessFeeGate;
  agents: AgentRegistry;
  payerKeySecret: string;
  /** The range of the seller's maxTimeoutSeconds this relayer pays (seller-terms.ts). */
  window: PaymentWindow;
  clock?: () => number;
}

/**
 * settle-x402 (docs/api.md 3.2 and 4.4, docs/design.md 5-7): pays an x402 seller through a fresh single-use payer. First the
 * pre-flight (seller-terms.ts): every term the seller's facilitator checks after funding is checked here. Then,
 * under the note's lease: build and sign the payer's EIP-3009 payment for the seller and recover its signer
 * against the token's domain separator, reserve, withdraw the gross amount to the payer by proof (the payer then
 * holds exactly the seller's amount; the take goes to the treasury), finalize. A retry replays the stored payment
 * and withdraws nothing.
 */
export class X402Settler {
  private readonly token: TokenDomainReader;
  private readonly sellerTerms: SellerTermsCheck;

  constructor(private readonly deps: X402SettlerDeps) {
    this.token = new TokenDomainReader(deps.chain);
    this.sellerTerms = new SellerTermsCheck({ chain: deps.chain, token: this.token, window: deps.window });
  }

  async settle(request: X402SettleRequest): Promise<X402Settlement> {
    const { facilitator } = this.deps;
    const { note } = request;
    const accepted = await this.sellerTerms.check(request.accepted);
    const sellerAmount = BigInt(amountOf(accepted));
    facilitator.checkInvoice({ note, payTo: accepted.payTo, amount: sellerAmount });
    const gross = grossForNet(sellerAmount, facilitator.takeBps);
    if (gross > note.value) {
      throw new RelayerError(
        "INVALID_PAYMENT_AMOUNT",
        `The seller asks ${sellerAmount}; with the ${facilitator.takeBps} bps take the note must cover ${gross}, and it holds ${note.value}. Use a note that covers it.`,
      );
    }
    await this.requirePrivacyAcknowledged(request.acceptNotPrivate);
    if (request.agentId !== undefined) {
      await this.deps.agents.check({ agentId: request.agentId, provider: accepted.payTo, amount: sellerAmount, category: request.category });
    }
    const nullifierHash = nullifierHashOf(note.nullifier);
    await this.deps.accessFee.assertAuthorized(nullifierHash);

    const payer = payerWallet(this.deps.payerKeySecret, nullifierHash);
    const result = await facilitator.spend(note, {
      amount: gross,
      recipient: payer.address,
      terms: ["x402", accepted.network, accepted.asset.toLowerCase(), accepted.payTo.toLowerCase(), sellerAmount],
      changeSecrets: request.changeSecrets,
      // Step 1, before anything is reserved or withdrawn: a failure here leaves the note untouched.
      buildPayment: async () => {
        const window = validityWindow(accepted, this.now());
        const payload = await buildPaymentPayload({ accepted, resource: request.resource, payer, window }).catch((error: unknown) => {
          throw new RelayerError("INVALID_REQUEST", `Could not build the x402 payment for the seller's entry (${(error as Error).message}). Nothing was spent.`);
        });
        const { separator } = await this.token.read();
        if (authorizationSignerUnder(separator, payload.payload) !== payer.address) {
          throw new RelayerError("INTERNAL", "The payer's authorization does not recover to the payer under the token's domain separator. Nothing was spent.");
        }
        return {
          xPayment: encodeXPayment(payload),
          validBefore: Number(window.validBefore),
          refundPrecommitment: precommitmentOf(deriveRefundSecrets(note)),
        };
      },
    });
    await facilitator.recordSpend({ note, agentId: request.agentId, amount: sellerAmount }, result);
    const payment = result.lease.payment!;
    return {
      ...result,
      xPayment: payment.xPayment,
      validBefore: payment.validBefore,
      x402Version: x402VersionOf(accepted),
      payer: payer.address,
      sellerAmount,
    };
  }

  /** Below the privacy minimum the caller must say it accepts a payment that is not private (docs/api.md 4.4). */
  private async requirePrivacyAcknowledged(acceptNotPrivate: boolean): Promise<void> {
    if (acceptNotPrivate) return;
    const anonymitySet = await this.deps.facilitator.anonymitySet();
    if (!isPrivate(anonymitySet)) {
      throw new RelayerError("PRIVACY_NOT_ACKNOWLEDGED", `${privacyBlock(anonymitySet).disclosure} Pass acceptNotPrivate:true to pay anyway.`);
    }
  }

  private now(): number {
    return (this.deps.clock ?? (() => Date.now() / 1000))();
  }
}

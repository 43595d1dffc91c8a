import { nullifierHashOf, precommitmentOf, deriveRefundSecrets, type Note, type NoteSecrets } from "../../sdk/index.js";
import {
  amountOf,
  buildPaymentPayload,
  chainIdOfNetwork,
  encodeXPayment,
  validityWindow,
  x402VersionOf,
  type ExactRequirement,
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

/** The authorization window when the seller's entry names none (the reference sellers' default). */
const DEFAULT_MAX_TIMEOUT_SECONDS = 60;

export interface X402SettleRequest {
  /** The seller's `exact` entry, as its 402 gave it (v1 or v2 shape). */
  accepted: SellerEntry;
  /** The v2 402's `resource`, echoed in a v2 payment. */
  resource?: ResourceInfo;
  note: Note;
  /** Change-note secrets; derived from the spent note when absent (DESIGN.md 2). */
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
  clock?: () => number;
}

/**
 * settle-x402 (spec 3.2 and 4.4, DESIGN.md 5-7): pays an x402 seller through a fresh single-use payer. Under
 * the note's lease: build and sign the payer's EIP-3009 payment for the seller, reserve, withdraw the gross
 * amount to the payer by proof (the payer then holds exactly the seller's amount; the take goes to the
 * treasury), finalize. A retry replays the stored payment and withdraws nothing.
 */
export class X402Settler {
  constructor(private readonly deps: X402SettlerDeps) {}

  async settle(request: X402SettleRequest): Promise<X402Settlement> {
    const { facilitator } = this.deps;
    const { note } = request;
    const accepted = await this.completeEntry(request.accepted);
    const sellerAmount = BigInt(amountOf(accepted));
    this.checkSellerTerms(accepted);
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

  /** The entry with the fields a payment needs: a missing window is 60 s, a missing domain the token's own. */
  private async completeEntry(entry: SellerEntry): Promise<ExactRequirement> {
    return {
      ...entry,
      maxTimeoutSeconds: entry.maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS,
      extra: entry.extra ?? (await this.deps.chain.tokenDomain()),
    } as ExactRequirement;
  }

  /** The seller must be paid in this pool's USDC on this chain. */
  private checkSellerTerms(accepted: ExactRequirement): void {
    const { chain } = this.deps;
    if (chainIdOfNetwork(accepted.network) !== chain.deployment.chainId) {
      throw new RelayerError("INVALID_REQUEST", `This facilitator pays on ${chain.network}; the seller's entry is for ${accepted.network}.`);
    }
    if (accepted.asset.toLowerCase() !== chain.deployment.usdc.toLowerCase()) {
      throw new RelayerError("INVALID_REQUEST", `This facilitator pays in USDC ${chain.deployment.usdc}; the seller asks for ${accepted.asset}.`);
    }
  }

  /** Below the privacy minimum the caller must say it accepts a payment that is not private (spec 4.4). */
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

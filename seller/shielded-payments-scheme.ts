import type { FacilitatorContext, Network, PaymentPayload, PaymentRequirements, SchemeNetworkFacilitator, SettleResponse, VerifyResponse } from "@x402/core/types";
import { offersShieldedProof } from "../sdk/x402/shielded.js";
import type { SellerPaymentMetrics } from "./payment-metrics.js";
import type { ShieldedPayments } from "./shielded-payments.js";
import { SHIELDED_REASONS } from "./shielded-reasons.js";

export interface ShieldedPaymentsSchemeParts {
  /** Verifies and settles the shielded-proof payments. */
  payments: ShieldedPayments;
  /** The account that sends their relays: a signer `supported` names. */
  settler: string;
  /**
   * The `exact` facilitator scheme for payments that are not shielded proofs (ExactEvmScheme of @x402/evm): the x402
   * facilitator holds one `exact` scheme per network, so this one hands it every other payment.
   */
  inner?: SchemeNetworkFacilitator;
  /** Counts what verify and settle answer. */
  metrics?: SellerPaymentMetrics;
}

/**
 * The `exact` scheme of an @x402/core facilitator (`x402Facilitator.register(network, scheme)`) over `payments`: a
 * shielded-proof payment is theirs, every other payment the inner scheme's. Its `supported` kind announces the
 * shielded-proof terms and names both settlers. Without an inner scheme, a plain payment is refused, not thrown.
 */
export class ShieldedPaymentsScheme implements SchemeNetworkFacilitator {
  readonly scheme = "exact";
  readonly caipFamily = "eip155:*";

  constructor(private readonly parts: ShieldedPaymentsSchemeParts) {}

  getExtra(network: Network): Record<string, unknown> | undefined {
    const { payments, inner } = this.parts;
    const innerExtra = inner?.getExtra(network);
    return network === payments.network ? { ...innerExtra, ...payments.extra() } : innerExtra;
  }

  getSigners(network: string): string[] {
    return [...new Set([...(this.parts.inner?.getSigners(network) ?? []), this.parts.settler])];
  }

  async verify(payload: PaymentPayload, requirements: PaymentRequirements, context?: FacilitatorContext): Promise<VerifyResponse> {
    const { payments, inner } = this.parts;
    const response = offersShieldedProof(requirements)
      ? await payments.verify(payload, requirements)
      : inner === undefined
        ? { isValid: false, invalidReason: SHIELDED_REASONS.notShielded, invalidMessage: notShieldedMessage(requirements) }
        : await inner.verify(payload, requirements, context);
    this.parts.metrics?.recordVerify(requirements, response);
    return response;
  }

  async settle(payload: PaymentPayload, requirements: PaymentRequirements, context?: FacilitatorContext): Promise<SettleResponse> {
    const { payments, inner } = this.parts;
    const response = offersShieldedProof(requirements)
      ? await payments.settle(payload, requirements)
      : inner === undefined
        ? { success: false, errorReason: SHIELDED_REASONS.notShielded, errorMessage: notShieldedMessage(requirements), transaction: "", network: requirements.network }
        : await inner.settle(payload, requirements, context);
    this.parts.metrics?.recordSettle(requirements, response);
    return response;
  }
}

function notShieldedMessage(requirements: PaymentRequirements): string {
  return `This facilitator settles shielded-proof payments only; ${requirements.network}'s entry does not name assetTransferMethod "shielded-proof".`;
}

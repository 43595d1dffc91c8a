import type { PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types";
import { Counter, type Registry } from "prom-client";
import { SHIELDED_PROOF } from "../sdk/x402/shielded.js";

/** How a seller's payment moves the money: by shielded proof, or the reference `exact` scheme's EIP-3009 or Permit2. */
export const SELLER_PAYMENT_METHODS = [SHIELDED_PROOF, "eip3009", "permit2"] as const;
export type SellerPaymentMethod = (typeof SELLER_PAYMENT_METHODS)[number];

/** The method an `exact` entry pays by (@x402/evm reads `extra.assetTransferMethod` the same way: EIP-3009 unless named). */
export function paymentMethodOf(requirements: Pick<PaymentRequirements, "extra">): SellerPaymentMethod {
  const named = (requirements.extra as { assetTransferMethod?: unknown } | undefined)?.assetTransferMethod;
  return named === SHIELDED_PROOF || named === "permit2" ? named : "eip3009";
}

/**
 * A seller facilitator's payments in Prometheus counters (docs/operations.md, "Seller payments"), named
 * `<prefix>payments_settled_total` and so on: the relayer's seller routes count under `relayer_seller_`, the
 * plug-in facilitator (ShieldedFacilitatorScheme) under the prefix its `metrics` option names.
 */
export class SellerPaymentMetrics {
  readonly settled: Counter<"method">;
  readonly refused: Counter<"method" | "step" | "reason">;
  readonly uncertain: Counter;

  constructor(registry: Registry, prefix: string) {
    const registers = [registry];
    this.settled = new Counter({
      name: `${prefix}payments_settled_total`,
      help: "Seller payments settled (settle answered success: payTo was paid), by method",
      labelNames: ["method"] as const,
      registers,
    });
    this.refused = new Counter({
      name: `${prefix}payments_refused_total`,
      help: "Seller payments refused, by method, step (verify, settle) and the x402 reason answered",
      labelNames: ["method", "step", "reason"] as const,
      registers,
    });
    this.uncertain = new Counter({
      name: `${prefix}relays_uncertain_total`,
      help: "Shielded-proof relays sent and not seen mined before the wait for them ended: the payment's settle failed, the relay may still be mined",
      registers,
    });
    // At 0 from the start: a series born at 1 would hide its first event from increase().
    for (const method of SELLER_PAYMENT_METHODS) this.settled.inc({ method }, 0);
    this.uncertain.inc(0);
  }

  recordVerify(requirements: Pick<PaymentRequirements, "extra">, response: VerifyResponse): void {
    if (!response.isValid) this.refused.inc({ method: paymentMethodOf(requirements), step: "verify", reason: response.invalidReason ?? "unknown" });
  }

  recordSettle(requirements: Pick<PaymentRequirements, "extra">, response: SettleResponse): void {
    const method = paymentMethodOf(requirements);
    if (response.success) this.settled.inc({ method });
    else this.refused.inc({ method, step: "settle", reason: response.errorReason ?? "unknown" });
  }
}

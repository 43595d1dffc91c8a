import { SHIELDED_RETRYABLE_REASONS } from "../sdk/x402/shielded.js";

/**
 * Why a shielded-proof payment is refused (a verify's invalidReason, a settle's errorReason), as the x402 packages name
 * their reasons: snake_case, one constant each. The retryable ones (SHIELDED_RETRYABLE_REASONS) are no refusal: an
 * outage, or the payment busy elsewhere; the buyer presents the same payment again.
 */
export const SHIELDED_REASONS = {
  invalidRequirements: "invalid_shielded_requirements",
  invalidPayload: "invalid_shielded_payload",
  termsMismatch: "invalid_shielded_terms",
  expired: "invalid_shielded_payment_expired",
  windowTooLong: "invalid_shielded_window_too_long",
  feeBelowGas: "invalid_shielded_fee_below_gas_cost",
  noteSpent: "invalid_shielded_note_spent",
  alreadyUsed: "invalid_shielded_payment_already_used",
  staleRoot: "invalid_shielded_stale_root",
  invalidProof: "invalid_shielded_proof",
  relayRefused: "invalid_shielded_relay_refused",
  referenceInvalid: "invalid_shielded_reference",
  settleFailed: "shielded_settle_failed",
  /** x402's name: a plain payment to a facilitator without the inner `exact` scheme that settles it. */
  notShielded: "unsupported_asset_transfer_method",
  ...SHIELDED_RETRYABLE_REASONS,
} as const;

export type ShieldedReason = (typeof SHIELDED_REASONS)[keyof typeof SHIELDED_REASONS];

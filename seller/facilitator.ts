// The facilitator entry of the package (`x402-privacy-seller/facilitator`): the scheme an @x402/core facilitator
// registers to verify and settle shielded-proof payments by relaying them from its own key.
export { MemoryPaymentClaims, type PaymentClaims } from "./payment-claims.js";
export { SHIELDED_FACILITATOR_METRICS_PREFIX, ShieldedFacilitatorScheme, type ShieldedFacilitatorSchemeOptions } from "./shielded-facilitator-scheme.js";
export { SHIELDED_REASONS, type ShieldedReason } from "./shielded-reasons.js";

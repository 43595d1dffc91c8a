// The seller's server entry of the package (`x402-privacy-seller/server`): the scheme an @x402/core resource server
// registers to offer and take shielded-proof payments, and the records of the payments it answered.
export { MemoryServedPayments, SERVED_RETENTION_SECONDS, type ServedPayments, type ServeStart } from "./served-payments.js";
export { PostgresServedPayments } from "./served-payments-postgres.js";
export { SHIELDED_REASONS, type ShieldedReason } from "./shielded-reasons.js";
export { ShieldedServerScheme, type ShieldedServerSchemeOptions } from "./shielded-server-scheme.js";

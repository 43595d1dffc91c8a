// The seller's side of the shielded-proof method (docs/x402-interop.md, "Shielded proof") as the repository uses it:
// what the package's entries (server.ts, facilitator.ts) export and the verify/settle logic the relayer's seller
// routes share with the plug-in facilitator. SqliteServedPayments is imported from ./served-payments-sqlite.js:
// node:sqlite needs Node 22.
export * from "./outage-answers.js";
export * from "./payment-claims.js";
export * from "./payment-metrics.js";
export * from "./request-reference.js";
export * from "./shielded-facilitator-scheme.js";
export * from "./shielded-payments.js";
export * from "./shielded-payments-scheme.js";
export * from "./shielded-reasons.js";
export * from "./shielded-server-scheme.js";
export * from "./serve-metrics.js";
export * from "./serve-once.js";
export * from "./served-payments.js";
export * from "./served-payments-postgres.js";

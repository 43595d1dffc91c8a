// What the relayer and the SDK share. The test peers (x402-peers/: the reference facilitator, the sellers, the
// plain 402) import the reference x402 packages, dev dependencies, and are imported by path.
export * from "./networks.js";
export * from "./schemas.js";
export * from "./eip712-domain.js";
export * from "./payload.js";
export * from "./pool-authorization.js";
export * from "./payment-required.js";
export * from "./probe.js";
export * from "./shielded.js";

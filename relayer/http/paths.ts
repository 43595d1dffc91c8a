/** The relayer's HTTP paths: the facilitator API (docs/api.md 4) and its OpenAPI document. */
export const ROUTES = {
  supported: "/api/facilitator/supported",
  verify: "/api/facilitator/verify",
  settle: "/api/facilitator/settle",
  settleX402: "/api/facilitator/settle-x402",
  quote: "/api/facilitator/quote",
  settleProof: "/api/facilitator/settle-proof",
  quoteX402: "/api/facilitator/quote-x402",
  settleX402Proof: "/api/facilitator/settle-x402-proof",
  quoteAccessFee: "/api/facilitator/quote-access-fee",
  accessFeeProof: "/api/facilitator/access-fee-proof",
  trees: "/api/facilitator/trees",
  authorize: "/api/facilitator/authorize",
  withdraw: "/api/withdraw",
  x402Pay: "/api/x402-pay",
  agentRegister: "/api/agent/register",
  openapi: "/api/openapi.json",
} as const;

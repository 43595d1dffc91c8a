export * from "./seed.js";
export * from "./deposit.js";
export {
  recoverNotes,
  DEFAULT_GAP_LIMIT,
  type NoteChain,
  type NoteChainStatus,
  type NoteChainStep,
  type RecoverNotesOptions,
  type RecoveredNotes,
} from "./recovery.js";
export {
  DEFAULT_BLOCK_RANGE,
  readStateLeaves,
  type EventLocation,
  type PoolAddressBook,
  type ReadPoolLogsOptions,
} from "./pool-events.js";
export { ragequitNote, type RagequitOptions } from "./ragequit.js";
export { returnUnusedPayment, type ReturnUnusedPaymentOptions } from "./unused-payment.js";
export * from "./vault.js";
export * from "./note-reservation.js";
export * from "./x402-agent.js";
export { AgentWallet, type FacilitatorTerms } from "./agent-wallet.js";
export { PoolExactPayments } from "./pool-exact-payments.js";
export { ShieldedPayments } from "./shielded-payments.js";
export { TabPayments } from "./tab-payments.js";
export { fetchSameOrigin } from "./same-origin-fetch.js";
export { proveLocally, type LocalProof, type QuoteExpectation } from "./local-proof.js";
export { ChainRootsReader, type ChainRoots, type OwnRpc, type RootsSource } from "./chain-roots.js";
export { preferShieldedProof, privatePoolScheme, registerPrivatePoolScheme, PrivatePoolScheme, type PrivatePoolSchemeOptions } from "./private-pool-scheme.js";
export { proveShieldedPayment, type AgentPool, type ShieldedProof } from "./shielded-proof.js";
export { emptyTrees, loadTrees, saveTrees, type AgentTrees } from "./tree-file.js";
export { DEFAULT_TAB_DEPOSIT_ATOMIC, DEFAULT_TAB_LIFETIME_SECONDS, type TabOptions } from "./private-tab.js";
export { tabSellerOf, type StoredTab, type TabStore } from "./tab-record.js";
export { PrivateTabScheme, registerPrivateTabScheme, type PrivateTabSchemeOptions } from "./private-tab-scheme.js";

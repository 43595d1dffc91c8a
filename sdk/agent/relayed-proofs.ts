import { verificationKeySha256 } from "../circuit/artifacts.js";
import type { SupportedAnswer } from "../client/facilitator-client.js";

/**
 * The entrypoint a facilitator relays this SDK's proofs through, when it does: it offers non-custodial spends of the
 * same circuit (the SHA-256 of its verification key is this SDK's).
 */
export async function proofsRelayedThrough(supported: SupportedAnswer): Promise<string | undefined> {
  const offered = supported.nonCustodial?.enabled === true && supported.nonCustodial.verificationKeySha256 === (await verificationKeySha256());
  return offered ? supported.contracts?.entrypoint : undefined;
}

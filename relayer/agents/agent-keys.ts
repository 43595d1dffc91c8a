import { createHmac, timingSafeEqual } from "node:crypto";

const DERIVATION_TAG = "x402-privacy-facilitator/agent-key/v1";

/**
 * The key that lets its holder see an agent's owner and spend and settle in its name: an HMAC of the agent id
 * under the operator's secret. Nothing is stored, so a database leak yields no key; the same secret and id give
 * the same key on every relayer instance. Sent in the X-Agent-Key header (docs/relayer.md).
 */
export function agentKeyFor(operatorSecret: string, agentId: string): string {
  return `ak_${createHmac("sha256", Buffer.from(operatorSecret.slice(2), "hex")).update(`${DERIVATION_TAG}|${agentId}`).digest("hex")}`;
}

/** Whether `presented` is the agent's key, compared in constant time. */
export function isAgentKey(operatorSecret: string, agentId: string, presented: string): boolean {
  const expected = Buffer.from(agentKeyFor(operatorSecret, agentId));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

// The operator's secret (PAYER_KEY_SECRET): the agents' API keys and the quote MAC key derive from it, each under its
// own tag (relayer/agents/agent-keys.ts, relayer/settlement/quote.ts). No key that holds or signs money derives from it.

/** How to make a secret that passes (the config error shows it). */
export const SECRET_RECIPE = `generate one with \`node -e "console.log('0x' + require('node:crypto').randomBytes(32).toString('hex'))"\` or \`echo 0x$(openssl rand -hex 32)\``;

/** At least this many distinct byte values: 32 random bytes hold about 30, fewer than 16 is a pattern. */
const MIN_DISTINCT_BYTES = 16;

/**
 * Why a 32-byte operator secret is too weak to derive keys from, or undefined when it is not. Anyone who guesses it
 * mints quotes this relayer takes for its own and answers as any agent: all zeros, a repeated byte or a short repeated
 * pattern, or a counting sequence (0x000102...) is refused.
 */
export function operatorSecretWeakness(secret: string): string | undefined {
  const bytes = Buffer.from(secret.slice(2), "hex");
  if (new Set(bytes).size < MIN_DISTINCT_BYTES) return `repeats too few byte values (fewer than ${MIN_DISTINCT_BYTES} distinct)`;
  const step = (bytes[1]! - bytes[0]! + 256) % 256;
  if (bytes.every((byte, i) => i === 0 || (byte - bytes[i - 1]! + 256) % 256 === step)) return "is a counting sequence";
  return undefined;
}

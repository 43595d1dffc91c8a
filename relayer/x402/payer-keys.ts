import { AbiCoder, keccak256, Wallet } from "ethers";

const DERIVATION_TAG = "x402-privacy-facilitator/payer/v1";

/**
 * The single-use payer of a settlement, derived from the operator's secret and the spent note's nullifier hash
 * (docs/design.md 6): never stored, always recoverable by the operator, e.g. to sweep funds an expired authorization
 * left behind. A different secret per deployment keeps payers unlinkable across operators.
 */
export function payerWallet(payerKeySecret: string, nullifierHash: bigint): Wallet {
  const key = keccak256(AbiCoder.defaultAbiCoder().encode(["string", "bytes32", "uint256"], [DERIVATION_TAG, payerKeySecret, nullifierHash]));
  return new Wallet(key);
}

/** How to make a secret that passes (the config error shows it). */
export const SECRET_RECIPE = `generate one with \`node -e "console.log('0x' + require('node:crypto').randomBytes(32).toString('hex'))"\` or \`echo 0x$(openssl rand -hex 32)\``;

/** At least this many distinct byte values: 32 random bytes hold about 30, fewer than 16 is a pattern. */
const MIN_DISTINCT_BYTES = 16;

/**
 * Why a 32-byte payer key secret is too weak to derive keys from, or undefined when it is not. Anyone who guesses
 * it holds every payer key, since the other input (the nullifier hash) is public: all zeros, a repeated byte or
 * a short repeated pattern, or a counting sequence (0x000102...) is refused.
 */
export function payerKeySecretWeakness(secret: string): string | undefined {
  const bytes = Buffer.from(secret.slice(2), "hex");
  if (new Set(bytes).size < MIN_DISTINCT_BYTES) return `repeats too few byte values (fewer than ${MIN_DISTINCT_BYTES} distinct)`;
  const step = (bytes[1]! - bytes[0]! + 256) % 256;
  if (bytes.every((byte, i) => i === 0 || (byte - bytes[i - 1]! + 256) % 256 === step)) return "is a counting sequence";
  return undefined;
}

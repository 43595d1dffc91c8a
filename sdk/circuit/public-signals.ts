/**
 * Names of the withdrawal circuit's public signals, in snarkjs order. The one TS mirror of
 * contracts/lib/ProofLib.sol; sdk, relayer and tests read signals through it.
 */
export const WITHDRAW_PUBLIC_SIGNALS = [
  "newCommitment",
  "nullifierHash",
  "refundAnchor",
  "valueFeeAndDepths",
  "stateRoot",
  "aspRoot",
  "context",
] as const;

export type WithdrawPublicSignalName = (typeof WITHDRAW_PUBLIC_SIGNALS)[number];

/** The parts of `valueFeeAndDepths`: the circuit packs them into one public input (one verifier multiplication). */
export interface ValueFeeAndDepths {
  withdrawnValue: bigint;
  stateTreeDepth: bigint;
  aspTreeDepth: bigint;
  /** The relay fee in basis points, at most 10000: the recipient is paid withdrawnValue less this share. */
  relayFeeBPS: bigint;
}

/** The positional signals by name, with `valueFeeAndDepths` also unpacked. */
export type WithdrawPublicSignals = Record<WithdrawPublicSignalName, bigint> & ValueFeeAndDepths;

const VALUE_BITS = 128n;
const DEPTH_BITS = 8n;
const FEE_BITS = 14n;
const FEE_SHIFT = VALUE_BITS + 2n * DEPTH_BITS;

/**
 * withdrawnValue + stateTreeDepth * 2^128 + aspTreeDepth * 2^136 + relayFeeBPS * 2^144, as the circuit constrains
 * it.
 */
export function packValueFeeAndDepths({ withdrawnValue, stateTreeDepth, aspTreeDepth, relayFeeBPS }: ValueFeeAndDepths): bigint {
  if (withdrawnValue < 0n || withdrawnValue >> VALUE_BITS !== 0n) throw new RangeError(`withdrawn value ${withdrawnValue} does not fit in 128 bits`);
  for (const depth of [stateTreeDepth, aspTreeDepth]) {
    if (depth < 0n || depth >> DEPTH_BITS !== 0n) throw new RangeError(`tree depth ${depth} does not fit in 8 bits`);
  }
  if (relayFeeBPS < 0n || relayFeeBPS > 10_000n) throw new RangeError(`relay fee ${relayFeeBPS} bps is not in [0, 10000]`);
  return withdrawnValue | (stateTreeDepth << VALUE_BITS) | (aspTreeDepth << (VALUE_BITS + DEPTH_BITS)) | (relayFeeBPS << FEE_SHIFT);
}

/**
 * The parts of a packed value, as ProofLib reads them: the low 128 bits, the next 8 twice, and everything above
 * (so an out-of-range fee shows as such rather than being masked away).
 */
export function unpackValueFeeAndDepths(packed: bigint): ValueFeeAndDepths {
  const depthMask = (1n << DEPTH_BITS) - 1n;
  return {
    withdrawnValue: packed & ((1n << VALUE_BITS) - 1n),
    stateTreeDepth: (packed >> VALUE_BITS) & depthMask,
    aspTreeDepth: (packed >> (VALUE_BITS + DEPTH_BITS)) & depthMask,
    relayFeeBPS: packed >> FEE_SHIFT,
  };
}

/** Names the positional signals snarkjs returns. */
export function namePublicSignals(signals: readonly (string | bigint)[]): WithdrawPublicSignals {
  if (signals.length !== WITHDRAW_PUBLIC_SIGNALS.length) {
    throw new RangeError(`expected ${WITHDRAW_PUBLIC_SIGNALS.length} public signals, got ${signals.length}`);
  }
  const named = Object.fromEntries(WITHDRAW_PUBLIC_SIGNALS.map((name, i) => [name, BigInt(signals[i]!)])) as Record<WithdrawPublicSignalName, bigint>;
  return { ...named, ...unpackValueFeeAndDepths(named.valueFeeAndDepths) };
}

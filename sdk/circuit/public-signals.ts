/**
 * Names of the withdrawal circuit's public signals, in snarkjs order. The one TS mirror of
 * contracts/lib/ProofLib.sol; sdk, relayer and tests read signals through it.
 */
export const WITHDRAW_PUBLIC_SIGNALS = ["newCommitment", "nullifierHash", "valueAndDepths", "stateRoot", "aspRoot", "context"] as const;

export type WithdrawPublicSignalName = (typeof WITHDRAW_PUBLIC_SIGNALS)[number];

/** The parts of `valueAndDepths`: the circuit packs them into one public input (one verifier multiplication). */
export interface ValueAndDepths {
  withdrawnValue: bigint;
  stateTreeDepth: bigint;
  aspTreeDepth: bigint;
}

/** The positional signals by name, with `valueAndDepths` also unpacked. */
export type WithdrawPublicSignals = Record<WithdrawPublicSignalName, bigint> & ValueAndDepths;

const VALUE_BITS = 128n;
const DEPTH_BITS = 8n;

/** withdrawnValue + stateTreeDepth * 2^128 + aspTreeDepth * 2^136, as the circuit constrains it. */
export function packValueAndDepths({ withdrawnValue, stateTreeDepth, aspTreeDepth }: ValueAndDepths): bigint {
  if (withdrawnValue < 0n || withdrawnValue >> VALUE_BITS !== 0n) throw new RangeError(`withdrawn value ${withdrawnValue} does not fit in 128 bits`);
  for (const depth of [stateTreeDepth, aspTreeDepth]) {
    if (depth < 0n || depth >> DEPTH_BITS !== 0n) throw new RangeError(`tree depth ${depth} does not fit in 8 bits`);
  }
  return withdrawnValue | (stateTreeDepth << VALUE_BITS) | (aspTreeDepth << (VALUE_BITS + DEPTH_BITS));
}

/**
 * The parts of a packed value, as ProofLib reads them: the low 128 bits, the next 8, and everything above (so an
 * out-of-range ASP depth shows as such rather than being masked away).
 */
export function unpackValueAndDepths(packed: bigint): ValueAndDepths {
  return {
    withdrawnValue: packed & ((1n << VALUE_BITS) - 1n),
    stateTreeDepth: (packed >> VALUE_BITS) & ((1n << DEPTH_BITS) - 1n),
    aspTreeDepth: packed >> (VALUE_BITS + DEPTH_BITS),
  };
}

/** Names the positional signals snarkjs returns. */
export function namePublicSignals(signals: readonly (string | bigint)[]): WithdrawPublicSignals {
  if (signals.length !== WITHDRAW_PUBLIC_SIGNALS.length) {
    throw new RangeError(`expected ${WITHDRAW_PUBLIC_SIGNALS.length} public signals, got ${signals.length}`);
  }
  const named = Object.fromEntries(WITHDRAW_PUBLIC_SIGNALS.map((name, i) => [name, BigInt(signals[i]!)])) as Record<WithdrawPublicSignalName, bigint>;
  return { ...named, ...unpackValueAndDepths(named.valueAndDepths) };
}

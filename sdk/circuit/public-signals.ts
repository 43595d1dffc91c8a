/**
 * Names of the withdrawal circuit's public signals, in snarkjs order. The one TS mirror of
 * contracts/lib/ProofLib.sol; sdk, relayer and tests read signals through it.
 */
export const WITHDRAW_PUBLIC_SIGNALS = [
  "newCommitment",
  "nullifierHash",
  "withdrawnValue",
  "stateRoot",
  "stateTreeDepth",
  "aspRoot",
  "aspTreeDepth",
  "context",
] as const;

export type WithdrawPublicSignalName = (typeof WITHDRAW_PUBLIC_SIGNALS)[number];
export type WithdrawPublicSignals = Record<WithdrawPublicSignalName, bigint>;

/** Names the positional signals snarkjs returns. */
export function namePublicSignals(signals: readonly (string | bigint)[]): WithdrawPublicSignals {
  if (signals.length !== WITHDRAW_PUBLIC_SIGNALS.length) {
    throw new RangeError(`expected ${WITHDRAW_PUBLIC_SIGNALS.length} public signals, got ${signals.length}`);
  }
  return Object.fromEntries(WITHDRAW_PUBLIC_SIGNALS.map((name, i) => [name, BigInt(signals[i]!)])) as WithdrawPublicSignals;
}

/** The positional form of named signals, as decimal strings. */
export function orderPublicSignals(signals: WithdrawPublicSignals): string[] {
  return WITHDRAW_PUBLIC_SIGNALS.map((name) => signals[name].toString());
}

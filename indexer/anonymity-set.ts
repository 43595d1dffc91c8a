/** What counts toward the anonymity set (docs/design.md section 9). */
export interface AnonymitySetPolicy {
  /** Deposits below this (atomic units) do not count. */
  minimumDeposit: bigint;
  /** Operator-affiliated depositors (checksummed), never counted: the operator cannot hide among its own deposits. */
  operatorAddresses: readonly string[];
}

export interface ScreenedDeposit {
  depositor: string;
  value: bigint;
  /** The ASP curator approved the deposit's label. */
  approved: boolean;
  /** The depositor took the deposit back: it no longer hides anyone. */
  ragequit: boolean;
}

/**
 * The anonymity set: distinct depositor addresses among ASP-approved deposits of at least the minimum deposit,
 * excluding operator-affiliated addresses and deposits taken back by ragequit. Distinct depositors, not deposits:
 * one address depositing ten times is one member. Refund notes are not deposits (they keep their origin's label),
 * so they never count.
 *
 * A payment's own set (`withdrawnValue`): only deposits of at least what it withdraws could have funded it, so only
 * their depositors hide its payer. Deposits whose notes are spent still count: which deposit a withdrawal spent is
 * exactly what the pool hides.
 */
export function anonymitySet(deposits: Iterable<ScreenedDeposit>, policy: AnonymitySetPolicy, withdrawnValue = 0n): number {
  const operators = new Set(policy.operatorAddresses);
  const members = new Set<string>();
  const smallest = withdrawnValue > policy.minimumDeposit ? withdrawnValue : policy.minimumDeposit;
  for (const deposit of deposits) {
    if (!deposit.approved || deposit.ragequit || deposit.value < smallest) continue;
    if (!operators.has(deposit.depositor)) members.add(deposit.depositor);
  }
  return members.size;
}

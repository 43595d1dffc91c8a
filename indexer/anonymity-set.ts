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
  return depositorReach(deposits, policy).countReaching(withdrawnValue);
}

/**
 * Each counted depositor's largest deposit, sorted: made once per change of the deposits or the ASP root, so that each
 * payment's set is a binary search (countReaching), not a pass over every deposit.
 */
export function depositorReach(deposits: Iterable<ScreenedDeposit>, policy: AnonymitySetPolicy): DepositorReach {
  const operators = new Set(policy.operatorAddresses);
  const largest = new Map<string, bigint>();
  for (const deposit of deposits) {
    if (!deposit.approved || deposit.ragequit || deposit.value < policy.minimumDeposit || operators.has(deposit.depositor)) continue;
    const before = largest.get(deposit.depositor);
    if (before === undefined || deposit.value > before) largest.set(deposit.depositor, deposit.value);
  }
  return new DepositorReach([...largest.values()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
}

export class DepositorReach {
  constructor(private readonly ascending: readonly bigint[]) {}

  /** How many depositors hold a deposit of at least `withdrawnValue` (and of the minimum deposit, as every counted one does). */
  countReaching(withdrawnValue: bigint): number {
    let low = 0;
    let high = this.ascending.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.ascending[middle]! < withdrawnValue) low = middle + 1;
      else high = middle;
    }
    return this.ascending.length - low;
  }
}

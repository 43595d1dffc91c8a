/** docs/api.md 2.4: every settlement says whether it was private, honestly (docs/design.md section 9). */
export const MINIMUM_FOR_PRIVACY = 30;

export interface PrivacyBlock {
  private: boolean;
  anonymitySet: number | null;
  minimumForPrivacy: number;
  disclosure: string;
  /** Groth16 proof metadata (docs/api.md 2.4: "Settle responses also carry Groth16 proof metadata"). */
  proof?: { system: "groth16"; curve: "bn128"; proofTimeMs: number; publicSignals: number };
}

/** Private only when the anonymity set is known and at least the minimum. */
export function isPrivate(anonymitySet: number | null): boolean {
  return anonymitySet !== null && anonymitySet >= MINIMUM_FOR_PRIVACY;
}

export function privacyBlock(anonymitySet: number | null, proofTimeMs?: number): PrivacyBlock {
  const verdict = isPrivate(anonymitySet);
  const disclosure =
    anonymitySet === null
      ? "NOT private: the anonymity set is unknown because the indexer is unavailable."
      : verdict
        ? `Private: the payment came from the pool, whose association set holds ${anonymitySet} independent depositors (minimum ${MINIMUM_FOR_PRIVACY}).`
        : `NOT private: the association set holds ${anonymitySet} independent depositor(s), below the minimum of ${MINIMUM_FOR_PRIVACY}; an observer can narrow the payer down to them.`;
  return {
    private: verdict,
    anonymitySet,
    minimumForPrivacy: MINIMUM_FOR_PRIVACY,
    disclosure,
    ...(proofTimeMs === undefined ? {} : { proof: { system: "groth16", curve: "bn128", proofTimeMs, publicSignals: 8 } }),
  };
}

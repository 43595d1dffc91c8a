import { WITHDRAW_PUBLIC_SIGNALS } from "../../sdk/index.js";

/** docs/api.md 2.4: every settlement says whether it was private, honestly (docs/design.md section 9). */
export const MINIMUM_FOR_PRIVACY = 30;

/** Who proved a spend: the relayer, from the note the agent sent, or the agent itself (docs/design.md 10). */
export type Custody = "custodial" | "non-custodial";

/** What the relayer learns of a note in each custody, as every settlement and `supported` say it. */
export const RELAYER_LEARNS: Record<Custody, string> = {
  custodial:
    "The agent sent the note: this relayer received its nullifier, secret, value, label and commitment, and the change note's secrets, " +
    "and proved the spend itself. While it held them it could have withdrawn the whole note anywhere; it can derive the change and refund " +
    "notes, so it links this payment to the deposit and to every later spend of the change note.",
  "non-custodial":
    "The agent proved the spend: this relayer received the proof, whose public signals are the nullifier hash, the amount withdrawn, the " +
    "state and ASP roots with their depths, the change note's commitment and the context (recipient, fee recipient, fee), all public on chain " +
    "once relayed, and for settle-x402 the refund note's precommitment. It never saw the note's value, label, commitment or secrets, nor the " +
    "change note's: it cannot spend them, nor tell which deposit paid, nor link the change note's later spends to this one except by timing " +
    "and amounts. The agent took its Merkle paths from the public leaf lists, not from a path lookup.",
};

export interface PrivacyBlock {
  private: boolean;
  anonymitySet: number | null;
  minimumForPrivacy: number;
  disclosure: string;
  /** Who proved the spend and what the relayer learnt of the note. */
  custody: { mode: Custody; relayerLearned: string };
  /** Groth16 proof metadata (docs/api.md 2.4: "Settle responses also carry Groth16 proof metadata"). */
  proof?: { system: "groth16"; curve: "bn128"; proofTimeMs: number; publicSignals: number };
}

/** Private only when the anonymity set is known and at least the minimum. */
export function isPrivate(anonymitySet: number | null): boolean {
  return anonymitySet !== null && anonymitySet >= MINIMUM_FOR_PRIVACY;
}

/** The verdict on one payment in words: private or not, and why (its anonymity set: the deposits that could have funded it). */
export function privacyDisclosure(anonymitySet: number | null): string {
  if (anonymitySet === null) return "NOT private: the anonymity set is unknown because the indexer is unavailable.";
  return isPrivate(anonymitySet)
    ? `Private: the payment came from the pool, and ${anonymitySet} independent depositors of the association set hold deposits that could have funded it (minimum ${MINIMUM_FOR_PRIVACY}).`
    : `NOT private: the association set holds ${anonymitySet} independent depositor(s) whose deposits could have funded this payment, below the minimum of ${MINIMUM_FOR_PRIVACY}; an observer can narrow the payer down to them.`;
}

/** The block of a settlement the relayer proved in `proofTimeMs` (none when the agent proved it). */
export function privacyBlock(anonymitySet: number | null, custody: Custody, proofTimeMs?: number): PrivacyBlock {
  return {
    private: isPrivate(anonymitySet),
    anonymitySet,
    minimumForPrivacy: MINIMUM_FOR_PRIVACY,
    disclosure: privacyDisclosure(anonymitySet),
    custody: { mode: custody, relayerLearned: RELAYER_LEARNS[custody] },
    ...(proofTimeMs === undefined ? {} : { proof: { system: "groth16", curve: "bn128", proofTimeMs, publicSignals: WITHDRAW_PUBLIC_SIGNALS.length } }),
  };
}

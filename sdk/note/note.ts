import { assertFieldElement, NOTE_VALUE_LIMIT } from "../crypto/field.js";
import { hash1, hash2, hash3 } from "../crypto/poseidon.js";

/** The bearer secrets of a note. Whoever holds them can spend it. */
export interface NoteSecrets {
  nullifier: bigint;
  secret: bigint;
}

/**
 * How a note's leaf is made. `deposit`, for deposits and every change note: Poseidon(value, label, precommitment).
 * `refund`, for a payout that came back into the pool (whole, or a tab's rest after its seller's claims):
 * Poseidon(value, Poseidon(label, precommitment)), which the pool makes from the value and the relay's refund anchor
 * without learning the label. The withdrawal circuit spends either.
 */
export type NoteForm = "deposit" | "refund";

/** A note of the pool (docs/design.md section 2). */
export interface Note extends NoteSecrets {
  /** Balance in atomic USDC, < 2^128. */
  value: bigint;
  /** Label assigned by the pool at deposit; kept by every change note and refund note. */
  label: bigint;
  form: NoteForm;
  /** The leaf in the pool's state tree, made as `form` says. */
  commitment: bigint;
}

/** Domain tags separating the secrets derived from one spent note: its change note's, and its refund note's. */
const CHANGE_NULLIFIER_TAG = 1n;
const CHANGE_SECRET_TAG = 2n;
const REFUND_NULLIFIER_TAG = 3n;
const REFUND_SECRET_TAG = 4n;

export function precommitmentOf({ nullifier, secret }: NoteSecrets): bigint {
  return hash2(nullifier, secret);
}

export function commitmentOf(value: bigint, label: bigint, precommitment: bigint): bigint {
  return hash3(value, label, precommitment);
}

/** Poseidon(label, precommitment): what every refund note of `label` under `precommitment` is made from. */
export function refundAnchorOf(label: bigint, precommitment: bigint): bigint {
  return hash2(label, precommitment);
}

/** The leaf of a refund note of `value`: Poseidon(value, anchor), as the pool inserts it. */
export function refundCommitmentOf(value: bigint, anchor: bigint): bigint {
  return hash2(value, anchor);
}

/** Revealed when the note is spent; the pool rejects a second spend of the same hash. */
export function nullifierHashOf(nullifier: bigint): bigint {
  return hash1(nullifier);
}

export function assertNoteValue(value: bigint, name = "value"): void {
  if (value < 0n || value >= NOTE_VALUE_LIMIT) {
    throw new RangeError(`${name} must be a non-negative integer below 2^128`);
  }
}

export function createNote(value: bigint, label: bigint, secrets: NoteSecrets, form: NoteForm = "deposit"): Note {
  assertNoteParts(value, label, secrets);
  return { ...secrets, value, label, form, commitment: leafOf(value, label, precommitmentOf(secrets), form) };
}

/**
 * The note whose leaf is `commitment`, in whichever form it was made; undefined when neither form of these parts
 * makes it. For notes handed over with their commitment (a vault file, a custodial request).
 */
export function noteWithCommitment(value: bigint, label: bigint, secrets: NoteSecrets, commitment: bigint): Note | undefined {
  assertNoteParts(value, label, secrets);
  const precommitment = precommitmentOf(secrets);
  const form = (["deposit", "refund"] as const).find((each) => leafOf(value, label, precommitment, each) === commitment);
  return form === undefined ? undefined : { ...secrets, value, label, form, commitment };
}

function assertNoteParts(value: bigint, label: bigint, secrets: NoteSecrets): void {
  assertNoteValue(value);
  assertFieldElement(label, "label");
  assertFieldElement(secrets.nullifier, "nullifier");
  assertFieldElement(secrets.secret, "secret");
}

/** The leaf of a note of these parts in `form`. */
function leafOf(value: bigint, label: bigint, precommitment: bigint, form: NoteForm): bigint {
  return form === "refund" ? refundCommitmentOf(value, refundAnchorOf(label, precommitment)) : commitmentOf(value, label, precommitment);
}

/**
 * Secrets of the change note created when `spent` is spent, when the caller supplies none:
 * nextNullifier = Poseidon(nullifier, secret, 1), nextSecret = Poseidon(nullifier, secret, 2).
 * Deterministic, so a change note is re-derivable from the note it replaces.
 */
export function deriveChangeSecrets({ nullifier, secret }: NoteSecrets): NoteSecrets {
  return {
    nullifier: hash3(nullifier, secret, CHANGE_NULLIFIER_TAG),
    secret: hash3(nullifier, secret, CHANGE_SECRET_TAG),
  };
}

/**
 * Secrets of the refund note of `spent`: refundNullifier = Poseidon(nullifier, secret, 3), refundSecret =
 * Poseidon(nullifier, secret, 4). When a settle-x402 authorization expires unused, or a tab's channel gives back
 * what its seller did not claim, the operator's sweep deposits it as the refund-form note of these secrets under
 * `spent`'s label, so the agent can find and spend it with the secrets it already has. The relayer keeps only
 * their precommitment.
 */
export function deriveRefundSecrets({ nullifier, secret }: NoteSecrets): NoteSecrets {
  return {
    nullifier: hash3(nullifier, secret, REFUND_NULLIFIER_TAG),
    secret: hash3(nullifier, secret, REFUND_SECRET_TAG),
  };
}

/**
 * The precommitment of `spent`'s refund note: what every withdrawal proof binds as its refundPrecommitment, and
 * reveals hashed with the label as its refundAnchor.
 */
export function refundPrecommitmentOf(spent: NoteSecrets): bigint {
  return precommitmentOf(deriveRefundSecrets(spent));
}

/** The note holding what remains of `spent` after `withdrawnValue` leaves the pool. */
export function changeNoteOf(
  spent: Note,
  withdrawnValue: bigint,
  changeSecrets: NoteSecrets = deriveChangeSecrets(spent),
): Note {
  if (withdrawnValue <= 0n || withdrawnValue > spent.value) {
    throw new RangeError(`withdrawn value must be in (0, ${spent.value}], got ${withdrawnValue}`);
  }
  return createNote(spent.value - withdrawnValue, spent.label, changeSecrets);
}

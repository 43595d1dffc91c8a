import { assertFieldElement, NOTE_VALUE_LIMIT } from "../crypto/field.js";
import { hash1, hash2, hash3 } from "../crypto/poseidon.js";

/** The bearer secrets of a note. Whoever holds them can spend it. */
export interface NoteSecrets {
  nullifier: bigint;
  secret: bigint;
}

/** A note of the pool (docs/design.md section 2). */
export interface Note extends NoteSecrets {
  /** Balance in atomic USDC, < 2^128. */
  value: bigint;
  /** Label assigned by the pool at deposit; kept by every change note. */
  label: bigint;
  /** Poseidon(value, label, precommitment): the leaf in the pool's state tree. */
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

/** Revealed when the note is spent; the pool rejects a second spend of the same hash. */
export function nullifierHashOf(nullifier: bigint): bigint {
  return hash1(nullifier);
}

export function assertNoteValue(value: bigint, name = "value"): void {
  if (value < 0n || value >= NOTE_VALUE_LIMIT) {
    throw new RangeError(`${name} must be a non-negative integer below 2^128`);
  }
}

export function createNote(value: bigint, label: bigint, secrets: NoteSecrets): Note {
  assertNoteValue(value);
  assertFieldElement(label, "label");
  assertFieldElement(secrets.nullifier, "nullifier");
  assertFieldElement(secrets.secret, "secret");
  return { ...secrets, value, label, commitment: commitmentOf(value, label, precommitmentOf(secrets)) };
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
 * Poseidon(nullifier, secret, 4). When a settle-x402 authorization expires unused, the operator's sweep deposits
 * what the payer holds under Poseidon(refundNullifier, refundSecret), so the agent can find and spend it with
 * the secrets it already has. The relayer keeps only that precommitment.
 */
export function deriveRefundSecrets({ nullifier, secret }: NoteSecrets): NoteSecrets {
  return {
    nullifier: hash3(nullifier, secret, REFUND_NULLIFIER_TAG),
    secret: hash3(nullifier, secret, REFUND_SECRET_TAG),
  };
}

/** The precommitment of `spent`'s refund note: what every withdrawal proof binds as its refundPrecommitment. */
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

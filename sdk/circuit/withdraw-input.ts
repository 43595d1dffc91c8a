import { assertFieldElement } from "../crypto/field.js";
import { assertNoteValue, type Note, type NoteSecrets } from "../note/note.js";
import type { MerkleWitness } from "../tree/merkle-witness.js";
import { MAX_TREE_DEPTH } from "./config.js";
import { packValueFeeAndDepths } from "./public-signals.js";

export interface WithdrawRequest {
  /** The note being spent. */
  note: Note;
  /** Amount leaving the pool, 0 < withdrawnValue <= note.value. */
  withdrawnValue: bigint;
  /** Secrets of the change note (deriveChangeSecrets(note) or the caller's own). */
  changeSecrets: NoteSecrets;
  /** Path of note.commitment in the state tree. */
  stateWitness: MerkleWitness;
  /** Path of note.label in the ASP tree. */
  aspWitness: MerkleWitness;
  /** withdrawalContext(withdrawal, scope). */
  context: bigint;
  /** The relay fee in basis points that the withdrawal's RelayData names (the entrypoint checks they agree). */
  relayFeeBPS: bigint;
  /**
   * Poseidon(nullifier, secret) of the note a refund of the payout would be (precommitmentOf(deriveRefundSecrets(note))).
   * It must hide: the proof reveals Poseidon(label, refundPrecommitment), which a guessable value would link to the
   * deposit's label. Given for every withdrawal, refunded or not.
   */
  refundPrecommitment: bigint;
}

/** Signal name to value(s) as decimal strings: what snarkjs' witness calculator takes. */
export type WithdrawCircuitInput = Record<string, string | string[]>;

function assertWitnessShape(witness: MerkleWitness, name: string): void {
  if (witness.siblings.length !== MAX_TREE_DEPTH) {
    throw new RangeError(`${name} must have ${MAX_TREE_DEPTH} siblings, got ${witness.siblings.length}`);
  }
}

/**
 * Builds the circuit input for a withdrawal. Rejects requests the circuit would reject anyway, with a message
 * that says why, instead of an opaque witness-generation failure.
 */
export function buildWithdrawInput(request: WithdrawRequest): WithdrawCircuitInput {
  const { note, withdrawnValue, changeSecrets, stateWitness, aspWitness, context, relayFeeBPS, refundPrecommitment } = request;
  assertNoteValue(note.value, "note value");
  if (withdrawnValue <= 0n || withdrawnValue > note.value) {
    throw new RangeError(`withdrawn value must be in (0, ${note.value}], got ${withdrawnValue}`);
  }
  if (changeSecrets.nullifier === note.nullifier) {
    throw new RangeError("the change note needs a nullifier different from the spent note's");
  }
  assertFieldElement(changeSecrets.nullifier, "change nullifier");
  assertFieldElement(changeSecrets.secret, "change secret");
  assertFieldElement(context, "context");
  assertFieldElement(refundPrecommitment, "refund precommitment");
  if (relayFeeBPS < 0n || relayFeeBPS > 10_000n) throw new RangeError(`relay fee must be in [0, 10000] bps, got ${relayFeeBPS}`);
  assertWitnessShape(stateWitness, "state witness");
  assertWitnessShape(aspWitness, "ASP witness");

  const str = (x: bigint | number) => x.toString();
  const valueFeeAndDepths = packValueFeeAndDepths({
    withdrawnValue,
    stateTreeDepth: BigInt(stateWitness.depth),
    aspTreeDepth: BigInt(aspWitness.depth),
    relayFeeBPS,
  });
  return {
    valueFeeAndDepths: str(valueFeeAndDepths),
    stateRoot: str(stateWitness.root),
    aspRoot: str(aspWitness.root),
    context: str(context),
    withdrawnValue: str(withdrawnValue),
    stateTreeDepth: str(stateWitness.depth),
    aspTreeDepth: str(aspWitness.depth),
    relayFeeBPS: str(relayFeeBPS),
    refundPrecommitment: str(refundPrecommitment),
    label: str(note.label),
    existingIsRefund: note.form === "refund" ? "1" : "0",
    existingValue: str(note.value),
    existingNullifier: str(note.nullifier),
    existingSecret: str(note.secret),
    newNullifier: str(changeSecrets.nullifier),
    newSecret: str(changeSecrets.secret),
    stateIndex: str(stateWitness.index),
    stateSiblings: stateWitness.siblings.map(str),
    aspIndex: str(aspWitness.index),
    aspSiblings: aspWitness.siblings.map(str),
  };
}

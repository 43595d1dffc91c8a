import {
  createLeanIMT,
  createNote,
  deriveChangeSecrets,
  hash1,
  merkleWitness,
  type Note,
  type NoteForm,
  type NoteSecrets,
  type WithdrawRequest,
} from "../../sdk/index.js";

export interface ScenarioOptions {
  value: bigint;
  withdrawnValue: bigint;
  label: bigint;
  /** How the spent note's leaf is made: a deposit's (or change note's), or a refund note's. */
  form: NoteForm;
  secrets: NoteSecrets;
  changeSecrets: NoteSecrets;
  /** Other commitments in the state tree before and after the note's own. */
  stateLeavesBefore: number;
  stateLeavesAfter: number;
  /** Other labels in the ASP tree; the note's label is appended unless `labelApproved` is false. */
  otherAspLabels: number;
  labelApproved: boolean;
  context: bigint;
  relayFeeBPS: bigint;
  refundPrecommitment: bigint;
}

export interface WithdrawScenario {
  note: Note;
  request: WithdrawRequest;
}

/** Deterministic filler leaves: distinct, non-zero field elements. */
const filler = (tag: bigint, i: number) => hash1(tag * 1_000_000n + BigInt(i));

/** A consistent withdrawal (note in the state tree, label in the ASP tree) with any part overridden. */
export function buildWithdrawScenario(overrides: Partial<ScenarioOptions> = {}): WithdrawScenario {
  const secrets = overrides.secrets ?? { nullifier: 11n, secret: 22n };
  const options: ScenarioOptions = {
    value: 5_000_000n,
    withdrawnValue: 1_250_000n,
    label: 987654321n,
    form: "deposit",
    secrets,
    changeSecrets: deriveChangeSecrets(secrets),
    stateLeavesBefore: 4,
    stateLeavesAfter: 2,
    otherAspLabels: 2,
    labelApproved: true,
    context: 424242n,
    relayFeeBPS: 500n,
    refundPrecommitment: 777777n,
    ...overrides,
  };
  const note = createNote(options.value, options.label, options.secrets, options.form);

  const stateLeaves = [
    ...Array.from({ length: options.stateLeavesBefore }, (_, i) => filler(1n, i)),
    note.commitment,
    ...Array.from({ length: options.stateLeavesAfter }, (_, i) => filler(2n, i)),
  ];
  const stateTree = createLeanIMT(stateLeaves);

  const aspLabels = Array.from({ length: options.otherAspLabels }, (_, i) => filler(3n, i));
  if (options.labelApproved) aspLabels.push(options.label);
  const aspTree = createLeanIMT(aspLabels);
  const aspIndex = options.labelApproved ? aspLabels.length - 1 : 0;

  return {
    note,
    request: {
      note,
      withdrawnValue: options.withdrawnValue,
      changeSecrets: options.changeSecrets,
      stateWitness: merkleWitness(stateTree, options.stateLeavesBefore),
      aspWitness: merkleWitness(aspTree, aspIndex),
      context: options.context,
      relayFeeBPS: options.relayFeeBPS,
      refundPrecommitment: options.refundPrecommitment,
    },
  };
}

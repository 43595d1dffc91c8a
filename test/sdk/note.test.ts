import { expect } from "chai";
import {
  changeNoteOf,
  commitmentOf,
  createNote,
  deriveChangeSecrets,
  encodeRelayData,
  labelOf,
  NOTE_VALUE_LIMIT,
  noteWithCommitment,
  nullifierHashOf,
  precommitmentOf,
  refundAnchorOf,
  refundCommitmentOf,
  scopeOf,
  SNARK_SCALAR_FIELD,
  withdrawalContext,
} from "../../sdk/index.js";

// Fixed vectors, computed once with this code and pinned: a change to the note scheme breaks them, and so would
// break every note already deposited. The circuit tests tie the same functions to the circuit's own hashes.
const SECRETS = { nullifier: 0x1234n, secret: 0x5678n };
const VECTORS = {
  precommitment: 662333458186807352681160150211310707878068677372094947727868710231477026721n,
  commitment: 7772766044626098101322874729640414559470630617454171182155756448090344600034n,
  nullifierHash: 8368350892283742770706103882526372389155909120902766519559133856152143518344n,
  changeNullifier: 1516726188534816938850588537583961768880925992570845957777729914520162646393n,
  changeSecret: 2850679496192780623257614255948965263923226994590458669332322171330428876889n,
  refundAnchor: 13356426549741914512543869767288409971395250901509679196352899991476696015593n,
  refundCommitment: 8737879973612979167089397972743283522937091688719109671687879839858831584183n,
  // Pool, chain and asset of the first Hardhat deployment addresses.
  scope: 1159582289016094876243468043392739455423383311264603983498058730724162192691n,
  firstLabel: 7687120520659009478065545207128063311673142031141651193257428054240118251669n,
  // The context of a plain relay's RelayData (recipient, fee recipient, fee: 96 bytes); it changes with the contracts'
  // relay data, not with the notes.
  context: 4694445995465065997352389429985970095524108631891100989155230868577686754525n,
};

describe("note scheme", function () {
  it("matches the pinned commitment and nullifier hash vectors", function () {
    expect(precommitmentOf(SECRETS)).to.equal(VECTORS.precommitment);
    expect(createNote(1_000_000n, 42n, SECRETS).commitment).to.equal(VECTORS.commitment);
    expect(commitmentOf(1_000_000n, 42n, VECTORS.precommitment)).to.equal(VECTORS.commitment);
    expect(nullifierHashOf(SECRETS.nullifier)).to.equal(VECTORS.nullifierHash);
  });

  it("makes a refund note's leaf from its value and the pinned refund anchor, without the label", function () {
    expect(refundAnchorOf(42n, VECTORS.precommitment)).to.equal(VECTORS.refundAnchor);
    expect(refundCommitmentOf(1_000_000n, VECTORS.refundAnchor)).to.equal(VECTORS.refundCommitment);
    expect(createNote(1_000_000n, 42n, SECRETS, "refund")).to.deep.include({ form: "refund", commitment: VECTORS.refundCommitment });
  });

  it("tells a note's form from its commitment, and knows no note whose parts make neither", function () {
    expect(noteWithCommitment(1_000_000n, 42n, SECRETS, VECTORS.commitment)).to.deep.include({ form: "deposit" });
    expect(noteWithCommitment(1_000_000n, 42n, SECRETS, VECTORS.refundCommitment)).to.deep.include({ form: "refund" });
    expect(noteWithCommitment(1_000_001n, 42n, SECRETS, VECTORS.refundCommitment)).to.equal(undefined);
    expect(noteWithCommitment(1_000_000n, 43n, SECRETS, VECTORS.commitment)).to.equal(undefined);
  });

  it("derives the pinned change-note secrets, distinct from the spent note's", function () {
    const change = deriveChangeSecrets(SECRETS);
    expect(change).to.deep.equal({ nullifier: VECTORS.changeNullifier, secret: VECTORS.changeSecret });
    expect(change.nullifier).to.not.equal(change.secret);
    expect(deriveChangeSecrets(change).nullifier).to.not.equal(change.nullifier);
  });

  it("matches the pinned scope, label and context vectors", function () {
    const scope = scopeOf("0x5FbDB2315678afecb367f032d93F642f64180aa3", 31337n, "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512");
    expect(scope).to.equal(VECTORS.scope);
    expect(labelOf(scope, 1n)).to.equal(VECTORS.firstLabel);
    const data = encodeRelayData({
      recipient: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      feeRecipient: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
      relayFeeBPS: 500n,
    });
    expect(withdrawalContext({ processooor: "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0", data }, scope)).to.equal(VECTORS.context);
  });

  it("keeps the label and the remaining value in the change note", function () {
    const note = createNote(1_000_000n, 42n, SECRETS);
    const change = changeNoteOf(note, 300_000n);
    expect(change.value).to.equal(700_000n);
    expect(change.label).to.equal(42n);
    expect(change.commitment).to.equal(commitmentOf(700_000n, 42n, precommitmentOf(deriveChangeSecrets(SECRETS))));
  });

  it("refuses withdrawals of zero or more than the note holds", function () {
    const note = createNote(1_000_000n, 42n, SECRETS);
    expect(() => changeNoteOf(note, 0n)).to.throw(RangeError, /withdrawn value/);
    expect(() => changeNoteOf(note, 1_000_001n)).to.throw(RangeError, /withdrawn value/);
  });

  it("refuses values of 2^128 or more and secrets outside the field", function () {
    expect(() => createNote(NOTE_VALUE_LIMIT, 42n, SECRETS)).to.throw(RangeError, /2\^128/);
    expect(() => createNote(1n, 42n, { nullifier: SNARK_SCALAR_FIELD, secret: 1n })).to.throw(RangeError, /nullifier/);
  });
});

// Until the full x402 flow lands, the main job shows what exists: a withdrawal proof made and checked with
// the committed keys, for a note in a small state tree.
import {
  buildWithdrawInput,
  createLeanIMT,
  createNote,
  deriveChangeSecrets,
  hash1,
  loadVerificationKey,
  merkleWitness,
  namePublicSignals,
  proveWithdrawal,
  releaseProverThreads,
  verifyWithdrawal,
} from "../../sdk/index.js";

const note = createNote(5_000_000n, 42n, { nullifier: 1001n, secret: 2002n });
const stateTree = createLeanIMT([hash1(1n), hash1(2n), note.commitment]);
const aspTree = createLeanIMT([7n, note.label]);
const input = buildWithdrawInput({
  note,
  withdrawnValue: 1_000_000n,
  changeSecrets: deriveChangeSecrets(note),
  stateWitness: merkleWitness(stateTree, 2),
  aspWitness: merkleWitness(aspTree, 1),
  context: 1n,
});

const started = performance.now();
const proof = await proveWithdrawal(input);
const proofMs = Math.round(performance.now() - started);
const valid = await verifyWithdrawal(proof, await loadVerificationKey());
const signals = namePublicSignals(proof.publicSignals);
console.log(`proof generated in ${proofMs} ms; verifies: ${valid}`);
for (const [name, value] of Object.entries(signals)) console.log(`  ${name.padEnd(15)} ${value}`);
await releaseProverThreads();
process.exitCode = valid ? 0 : 1;

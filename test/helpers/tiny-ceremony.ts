import { mkdir } from "node:fs/promises";
import path from "node:path";
import { compileCircom, REPO_ROOT, type CompiledCircuit } from "../../scripts/circuits/compile.js";
import { artifactPaths, type ArtifactPaths } from "../../scripts/circuits/export-artifacts.js";
import type { AcceptedPhase1, KeyAssessmentOptions } from "../../scripts/circuits/key-trust.js";
import { applyBeacon, contribute } from "../../scripts/ceremony/contribute.js";
import { finishCeremony } from "../../scripts/ceremony/finish.js";
import { createDevelopmentPhase1 } from "../../scripts/ceremony/phase1.js";
import { startCeremony } from "../../scripts/ceremony/start.js";
import { readTranscript, TRANSCRIPT_FILE, type Transcript } from "../../scripts/ceremony/transcript.js";

export const TINY_CIRCUIT = path.join(REPO_ROOT, "test", "circuits", "fixtures", "ceremony-tiny.circom");
export const TINY_BEACON = { value: "8f3a2c1d0e9b7a6f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a098f7e", iterationsExp: 10, source: "test beacon, announced nowhere" };

export interface TinyCeremony {
  circuit: CompiledCircuit;
  /** The development phase-1 file (power 5) it started from. */
  ptau: string;
  /** The ceremony's folder: transcript and every zkey. */
  dir: string;
  transcript: Transcript;
  /** Where finish wrote the key, laid out as a checkout (sdk/artifacts, contracts/verifiers). */
  paths: ArtifactPaths;
  /** Its phase 1 as if it were a public file: what a ceremony on a public phase 1 would be judged with. */
  acceptedAsPublic: AcceptedPhase1;
  /** The assessment of a key on that public file, the file named as PHASE1_PTAU names it. */
  asPublic: KeyAssessmentOptions;
}

/**
 * A whole ceremony on the tiny test circuit, in this process: a development phase 1 of power 5, `parties`
 * contributions, the beacon unless `beacon` is false, and finish (as a development key) into `work`/out.
 */
export async function runTinyCeremony(work: string, parties = ["Alice", "Bob", "Carol"], beacon = true): Promise<TinyCeremony> {
  const say = () => {};
  await mkdir(path.join(work, "circuit"), { recursive: true });
  const circuit = await compileCircom(TINY_CIRCUIT, path.join(work, "circuit"), "O2");
  const ptau = path.join(work, "pot5_dev.ptau");
  const dir = path.join(work, "ceremony");
  await createDevelopmentPhase1(5, ptau, say);
  await startCeremony({ dir, ptau, development: true, circuit: { name: "ceremony-tiny", r1cs: circuit.r1cs }, say });
  for (const name of parties) await contribute({ dir, name, say });
  if (beacon) await applyBeacon({ dir, beacon: TINY_BEACON, say });
  const paths = artifactPaths(path.join(work, "out"));
  const ceremonyCircuit = { name: "ceremony-tiny", r1cs: circuit.r1cs, wasm: circuit.wasm };
  await finishCeremony({ dir, ptau, circuit: ceremonyCircuit, development: true, paths, say });
  const transcript = await readTranscript(path.join(dir, TRANSCRIPT_FILE));
  const acceptedAsPublic = { 5: { file: "pot5_dev.ptau", blake2b: transcript.phase1.blake2b } };
  return { circuit, ptau, dir, transcript, paths, acceptedAsPublic, asPublic: { publicPhase1File: ptau, accepted: acceptedAsPublic } };
}

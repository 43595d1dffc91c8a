import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import * as snarkjs from "snarkjs";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { progressLogger } from "../circuits/progress.js";
import { checkPhase1 } from "./phase1.js";
import { TRANSCRIPT_FILE, writeTranscript, type Transcript } from "./transcript.js";

/** The circuit a ceremony is for: its name (the zkeys are <name>_NNNN.zkey) and compiled files. */
export interface CeremonyCircuit {
  name: string;
  r1cs: string;
  wasm: string;
}

export interface StartOptions {
  /** The ceremony's folder: the transcript and every zkey go here. */
  dir: string;
  ptau: string;
  /** Accept a phase-1 file that is not a known public one, recorded as a development file. */
  development: boolean;
  circuit: Pick<CeremonyCircuit, "name" | "r1cs">;
  say: (line: string) => void;
}

/**
 * Opens a ceremony in `dir`: checks the phase-1 file, makes the circuit's initial zkey from it (snarkjs zkey new:
 * deterministic, no secret) and writes the transcript. Refuses a folder that already holds a ceremony.
 */
export async function startCeremony({ dir, ptau, development, circuit, say }: StartOptions): Promise<Transcript> {
  const transcriptFile = path.join(dir, TRANSCRIPT_FILE);
  if (await stat(transcriptFile).then(() => true, () => false)) throw new Error(`${transcriptFile} exists: this folder holds a ceremony already`);
  say(`checking the phase-1 file ${ptau}`);
  const phase1 = await checkPhase1(ptau, development);
  say(`phase 1: ${phase1.source}, power ${phase1.power}`);
  if (phase1.development) say("phase 1 is a DEVELOPMENT file: keys from this ceremony are development keys, refused on production chains");

  const info = await snarkjs.r1cs.info(circuit.r1cs);
  await mkdir(dir, { recursive: true });
  const output = `${circuit.name}_0000.zkey`;
  say(`phase 2: the initial zkey for ${circuit.name} (${info.nConstraints} constraints)`);
  await snarkjs.zKey.newZKey(circuit.r1cs, ptau, path.join(dir, output), progressLogger(say));

  const transcript: Transcript = {
    format: "x402-privacy-facilitator/ceremony-transcript/1",
    circuit: circuit.name,
    r1csSha256: await sha256File(circuit.r1cs),
    constraints: info.nConstraints,
    phase1,
    steps: [{ kind: "start", at: new Date().toISOString(), output: { file: output, sha256: await sha256File(path.join(dir, output)) } }],
  };
  await writeTranscript(transcriptFile, transcript);
  say(`started: ${path.join(dir, output)} and ${transcriptFile}; the first contributor takes both`);
  return transcript;
}

import { randomBytes } from "node:crypto";
import path from "node:path";
import * as snarkjs from "snarkjs";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { progressLogger } from "../circuits/progress.js";
import {
  BeaconSchema,
  ContributorNameSchema,
  latestZkey,
  nextZkeyFile,
  phaseTwoSteps,
  readTranscript,
  TRANSCRIPT_FILE,
  writeTranscript,
  type Beacon,
  type PhaseTwoStep,
  type Transcript,
} from "./transcript.js";
import { contributionMismatches } from "./chain.js";
import { readZkeyContributions } from "./zkey-contributions.js";

/**
 * The ceremony in `dir`, ready for its next step: the zkey the transcript ends with is there, byte for byte, and
 * carries exactly the contributions the transcript lists. Refuses a ceremony its beacon closed.
 */
async function nextStep(dir: string) {
  const transcriptFile = path.join(dir, TRANSCRIPT_FILE);
  const transcript = await readTranscript(transcriptFile);
  if (transcript.steps.at(-1)?.kind === "beacon") throw new Error("the beacon closed this ceremony: nothing may follow it (run finish)");
  const input = latestZkey(transcript);
  const inputPath = path.join(dir, input.file);
  const sha256 = await sha256File(inputPath);
  if (sha256 !== input.sha256) {
    throw new Error(`${inputPath} is not the zkey the transcript ends with (SHA-256 ${sha256}, transcript ${input.sha256}); get the right file`);
  }
  const mismatches = contributionMismatches(await readZkeyContributions(inputPath), phaseTwoSteps(transcript));
  if (mismatches.length > 0) throw new Error(`${inputPath} does not carry the transcript's contributions: ${mismatches.join("; ")}`);
  const output = nextZkeyFile(transcript);
  return { transcriptFile, transcript, input, inputPath, output, outputPath: path.join(dir, output) };
}

/** A contribution or beacon step without what `record` fills in. */
type StepBody = PhaseTwoStep extends infer S ? (S extends PhaseTwoStep ? Omit<S, "at" | "input" | "output"> : never) : never;

/** Appends `step` (its output hashed now) to the transcript. */
async function record(next: Awaited<ReturnType<typeof nextStep>>, step: StepBody): Promise<Transcript> {
  const transcript = {
    ...next.transcript,
    steps: [
      ...next.transcript.steps,
      { ...step, at: new Date().toISOString(), input: next.input, output: { file: next.output, sha256: await sha256File(next.outputPath) } } as PhaseTwoStep,
    ],
  };
  await writeTranscript(next.transcriptFile, transcript);
  return transcript;
}

export interface ContributeOptions {
  dir: string;
  /** The contributor's public name, stored in the zkey; unique in the ceremony. */
  name: string;
  /** Mixed into the contribution's randomness with 64 bytes from the OS; never stored or printed. */
  extraEntropy?: string;
  say: (line: string) => void;
}

/**
 * One party's contribution: reads the latest zkey, writes the next one and records it. The secret it draws (from
 * the OS, plus `extraEntropy`) lives in this process's memory only: snarkjs writes nothing but the new zkey.
 */
export async function contribute({ dir, name, extraEntropy, say }: ContributeOptions): Promise<Transcript> {
  ContributorNameSchema.parse(name);
  const next = await nextStep(dir);
  if (phaseTwoSteps(next.transcript).some((step) => step.name === name)) throw new Error(`"${name}" has contributed already; each party contributes once, under its own name`);
  say(`contributing as "${name}": ${next.input.file} -> ${next.output}`);
  const hash = await snarkjs.zKey.contribute(next.inputPath, next.outputPath, name, `${randomBytes(64).toString("hex")}${extraEntropy ?? ""}`, progressLogger(say));
  const contributionHash = Buffer.from(hash).toString("hex");
  const transcript = await record(next, { kind: "contribution", name, contributionHash });
  say(`contribution hash of "${name}" (publish it yourself, so anyone can find it in the transcript):`);
  say(`  ${contributionHash}`);
  say(`pass ${next.outputPath} and ${next.transcriptFile} to the next party`);
  return transcript;
}

export interface BeaconOptions {
  dir: string;
  beacon: Beacon;
  name?: string;
  say: (line: string) => void;
}

/**
 * The last step: a public random beacon (a value nobody could know before the last contribution, e.g. a block hash
 * announced in advance) hashed 2^iterationsExp times into a final contribution anyone can recompute.
 */
export async function applyBeacon({ dir, beacon, name = "public random beacon", say }: BeaconOptions): Promise<Transcript> {
  BeaconSchema.parse(beacon);
  ContributorNameSchema.parse(name);
  const next = await nextStep(dir);
  say(`applying the beacon ${beacon.value} (2^${beacon.iterationsExp} iterations; ${beacon.source}): ${next.input.file} -> ${next.output}`);
  const hash = await snarkjs.zKey.beacon(next.inputPath, next.outputPath, name, beacon.value, beacon.iterationsExp, progressLogger(say));
  if (hash === false) throw new Error("snarkjs refused the beacon (see its error above)");
  const contributionHash = Buffer.from(hash).toString("hex");
  const transcript = await record(next, { kind: "beacon", name, contributionHash, beacon });
  say(`beacon applied (contribution hash ${contributionHash}); run verify, then finish`);
  return transcript;
}

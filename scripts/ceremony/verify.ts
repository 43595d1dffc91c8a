import { stat } from "node:fs/promises";
import path from "node:path";
import * as snarkjs from "snarkjs";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { progressLogger } from "../circuits/progress.js";
import { chainProblems, contributionMismatches } from "./chain.js";
import { fileHashes, KNOWN_PHASE1 } from "./phase1.js";
import { phaseTwoSteps, readTranscript, type Transcript } from "./transcript.js";
import { readZkeyContributions } from "./zkey-contributions.js";

export interface VerifyOptions {
  transcriptFile: string;
  /** The phase-1 file the ceremony started from. */
  ptau: string;
  /** The circuit's r1cs, compiled from this checkout. */
  r1cs: string;
  /** The final zkey where it is not beside the transcript under its recorded name (sdk/artifacts/withdraw.zkey). */
  zkey?: string;
  say: (line: string) => void;
}

export interface CeremonyCheck {
  check: string;
  ok: boolean;
  detail: string;
}

const exists = (file: string) => stat(file).then(() => true, () => false);

/**
 * Re-checks a ceremony from its transcript, the phase-1 file and the r1cs: the files are the ones the transcript
 * names (hashes), its steps chain, the final zkey carries exactly its contributions and beacon, and snarkjs' zkey
 * verify accepts the final zkey for this r1cs and phase 1 (which checks every contribution's proof, the beacon's
 * derivation and the key's points), run only where every cheaper check passed. Earlier zkeys are checked by hash where present; the final one must be.
 */
export async function verifyCeremony(options: VerifyOptions): Promise<{ ok: boolean; checks: CeremonyCheck[]; transcript: Transcript }> {
  const { transcriptFile, ptau, r1cs, say } = options;
  const transcript = await readTranscript(transcriptFile);
  const checks: CeremonyCheck[] = [];
  const add = (check: string, ok: boolean, detail: string) => {
    checks.push({ check, ok, detail });
    say(`${ok ? "ok  " : "FAIL"} ${check}: ${detail}`);
  };

  const { phase1 } = transcript;
  const ptauHashes = await fileHashes(ptau);
  add("phase-1 file", ptauHashes.blake2b === phase1.blake2b && ptauHashes.sha256 === phase1.sha256, `${path.basename(ptau)} BLAKE2b ${ptauHashes.blake2b}, transcript ${phase1.blake2b}`);
  const known = KNOWN_PHASE1[phase1.power];
  if (phase1.development) add("phase-1 origin", true, `DEVELOPMENT file (${phase1.source}): development keys only`);
  else add("phase-1 origin", known?.blake2b === phase1.blake2b, known === undefined ? `no public file of power ${phase1.power} is known` : `${known.file}, published BLAKE2b ${known.blake2b}`);

  const r1csSha256 = await sha256File(r1cs);
  add("r1cs", r1csSha256 === transcript.r1csSha256, `SHA-256 ${r1csSha256}, transcript ${transcript.r1csSha256}`);

  const problems = chainProblems(transcript);
  add("steps chain", problems.length === 0, problems.length === 0 ? `${transcript.steps.length} steps, each from the one before` : problems.join("; "));

  const dir = path.dirname(transcriptFile);
  const last = transcript.steps.length - 1;
  const finalZkey = options.zkey ?? path.join(dir, transcript.steps[last]!.output.file);
  for (const [i, step] of transcript.steps.entries()) {
    const file = i === last ? finalZkey : path.join(dir, step.output.file);
    const label = `zkey of step ${i} (${step.kind === "start" ? "start" : step.name})`;
    if (!(await exists(file))) {
      add(label, i !== last, i === last ? `${file} is missing` : `${step.output.file} is not here; the next step's input hash stands for it`);
      continue;
    }
    const sha256 = await sha256File(file);
    add(label, sha256 === step.output.sha256, `${path.basename(file)} SHA-256 ${sha256}, transcript ${step.output.sha256}`);
  }
  if (!(await exists(finalZkey))) return { ok: false, checks, transcript };

  const mismatches = contributionMismatches(await readZkeyContributions(finalZkey), phaseTwoSteps(transcript));
  add("contributions in the final zkey", mismatches.length === 0, mismatches.length === 0 ? `${phaseTwoSteps(transcript).length}, as the transcript lists them` : mismatches.join("; "));

  const failed = checks.filter((check) => !check.ok).map((check) => check.check);
  if (failed.length > 0) {
    say(`skipping snarkjs zkey verify (the long step): the ceremony fails already (${failed.join("; ")})`);
    return { ok: false, checks, transcript };
  }
  say("snarkjs zkey verify: the final zkey against the r1cs and the phase-1 file (the long step)");
  const verified = await snarkjs.zKey.verifyFromR1cs(r1cs, ptau, finalZkey, progressLogger(say)).catch((error: unknown) => {
    say(`  error: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  });
  add("snarkjs zkey verify", verified, verified ? "every contribution and the beacon check out, and the key's points follow from them" : "refused (see above)");

  return { ok: checks.every((check) => check.ok), checks, transcript };
}

import type { PhaseTwoStep, Transcript } from "./transcript.js";
import type { ZkeyContribution } from "./zkey-contributions.js";

/**
 * Where the transcript's steps fail to chain, each as a phrase: one start, first; every later step's input is the
 * previous step's output; a beacon only last; each contributor once.
 */
export function chainProblems(transcript: Transcript): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  transcript.steps.forEach((step, i) => {
    if ((step.kind === "start") !== (i === 0)) problems.push(`step ${i}: ${step.kind === "start" ? "a second start" : "the first step is not the start"}`);
    if (step.kind === "beacon" && i !== transcript.steps.length - 1) problems.push(`step ${i}: the beacon is not the last step`);
    if (step.kind === "start") return;
    const previous = transcript.steps[i - 1]!.output;
    if (step.input.file !== previous.file || step.input.sha256 !== previous.sha256) {
      problems.push(`step ${i} (${step.name}): its input ${step.input.file} (${step.input.sha256}) is not step ${i - 1}'s output ${previous.file} (${previous.sha256})`);
    }
    if (names.has(step.name)) problems.push(`step ${i}: "${step.name}" contributed twice`);
    names.add(step.name);
  });
  return problems;
}

/** Where the contributions a zkey carries differ from the transcript's contributions and beacon, each as a phrase. */
export function contributionMismatches(found: ZkeyContribution[], steps: PhaseTwoStep[]): string[] {
  const problems: string[] = [];
  if (found.length !== steps.length) problems.push(`the zkey carries ${found.length} contributions, the transcript lists ${steps.length}`);
  steps.forEach((step, i) => {
    const carried = found[i];
    if (carried === undefined) return;
    const label = `contribution ${i + 1}`;
    if (carried.name !== step.name) problems.push(`${label}: named "${carried.name}" in the zkey, "${step.name}" in the transcript`);
    if (carried.hash !== step.contributionHash) problems.push(`${label} ("${step.name}"): hash ${carried.hash} in the zkey, ${step.contributionHash} in the transcript`);
    const beacon = step.kind === "beacon" ? step.beacon : undefined;
    if ((carried.beacon === undefined) !== (beacon === undefined)) {
      problems.push(`${label}: ${beacon === undefined ? "a beacon in the zkey, a contribution in the transcript" : "a contribution in the zkey, a beacon in the transcript"}`);
    } else if (carried.beacon !== undefined && beacon !== undefined) {
      if (carried.beacon.value !== beacon.value) problems.push(`${label}: beacon value ${carried.beacon.value} in the zkey, ${beacon.value} in the transcript`);
      if (carried.beacon.iterationsExp !== beacon.iterationsExp) {
        problems.push(`${label}: 2^${carried.beacon.iterationsExp} beacon iterations in the zkey, 2^${beacon.iterationsExp} in the transcript`);
      }
    }
  });
  return problems;
}

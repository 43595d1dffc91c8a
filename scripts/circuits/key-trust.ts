import { readFile } from "node:fs/promises";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import * as snarkjs from "snarkjs";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { chainProblems, contributionMismatches } from "../ceremony/chain.js";
import { KNOWN_PHASE1 } from "../ceremony/phase1.js";
import { latestZkey, phaseTwoSteps, readTranscript, type Transcript } from "../ceremony/transcript.js";
import { readZkeyContributions, type ZkeyContribution } from "../ceremony/zkey-contributions.js";
import { generateBatchVerifier } from "./batch-verifier.js";
import { artifactPaths, type ArtifactPaths } from "./export-artifacts.js";
import { readManifest, type ArtifactManifest } from "./manifest.js";
import { generateVerifier } from "./verifier.js";

/** Independent phase-2 contributions a production key needs: the key is sound if any one of them was honest. */
export const PRODUCTION_MIN_CONTRIBUTIONS = 3;

/** The public phase-1 files a production key may start from, BLAKE2b-512 by power (default: Hermez', phase1.ts). */
export type AcceptedPhase1 = Readonly<Record<number, { file: string; blake2b: string }>>;

/**
 * Phase-1 files known to be development files, by SHA-256: one party made each, and may know its toxic waste.
 * `npm run circuits:setup` makes a new one each time it finds none; any file not in KNOWN_PHASE1 counts as
 * development whether listed here or not, this list only names it.
 */
export const KNOWN_DEVELOPMENT_PHASE1: Readonly<Record<string, string>> = {
  "119bd03e86f33c069a41721ac4182d0b462b3483942c2ca056bb36c25be1714d": "the local power-15 file the first development key was set up from",
};

/** What the committed files say about the proving key, read from the files themselves rather than from a flag. */
export interface ProvingKeyAssessment {
  /** One line: the contributions and beacon the zkey carries, and the phase 1 its hash names. */
  description: string;
  /** Where the files contradict each other (a pinned hash, a derived verifier, the transcript): wrong on any chain. */
  inconsistencies: string[];
  /** What a consistent key lacks for real funds: a public phase 1, three contributions, a beacon, a transcript. */
  lacks: string[];
  /** The contributions the zkey carries, the beacon (if any) last. */
  contributions: ZkeyContribution[];
}

/** Where a phase 1 comes from, judged by its hashes alone: an accepted public file, or a development one. */
export function phase1Origin(ptau: { power: number; sha256: string; blake2b?: string }, accepted: AcceptedPhase1 = KNOWN_PHASE1): { public: boolean; text: string } {
  const known = accepted[ptau.power];
  if (known !== undefined && ptau.blake2b === known.blake2b) return { public: true, text: `the public ${known.file}` };
  const development = KNOWN_DEVELOPMENT_PHASE1[ptau.sha256];
  if (development !== undefined) return { public: false, text: `a development file (${development}; SHA-256 ${ptau.sha256.slice(0, 16)}...)` };
  return { public: false, text: `a development file: no public file of power ${ptau.power} has its hash (SHA-256 ${ptau.sha256.slice(0, 16)}...)` };
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;

/**
 * What a key with these facts lacks for real funds, each as a phrase: a public phase 1, PRODUCTION_MIN_CONTRIBUTIONS
 * phase-2 contributions, a beacon after them, a transcript to check them by.
 */
export function productionLacks(facts: { origin: { public: boolean; text: string }; parties: number; beacon: boolean; transcript: boolean }): string[] {
  return [
    ...(facts.origin.public ? [] : [`its phase 1 is ${facts.origin.text}`]),
    ...(facts.parties < PRODUCTION_MIN_CONTRIBUTIONS ? [`${plural(facts.parties, "phase-2 contribution")}, ${PRODUCTION_MIN_CONTRIBUTIONS} needed`] : []),
    ...(facts.beacon ? [] : ["no random beacon after the last contribution"]),
    ...(facts.transcript ? [] : ["no ceremony transcript is committed beside it, so nobody can check who contributed"]),
  ];
}

const names = (contributions: { name: string }[]) => contributions.map((contribution) => contribution.name).join(", ");
const read = (file: string) => readFile(file, "utf8").catch(() => undefined);

/** Each pinned file (the keys and both verifiers) against the manifest's SHA-256 of it. */
async function pinProblems(paths: ArtifactPaths, manifest: ArtifactManifest): Promise<string[]> {
  const problems: string[] = [];
  const manifestName = path.relative(paths.root, paths.manifest);
  for (const file of [paths.wasm, paths.zkey, paths.vkey, paths.verifier, paths.batchVerifier]) {
    const name = path.relative(paths.root, file);
    const pinned = manifest.files[name];
    if (pinned === undefined) problems.push(`${name} is not pinned by ${manifestName}`);
    else if (pinned !== (await sha256File(file).catch(() => "missing"))) problems.push(`${name} is not the file ${manifestName} pins`);
  }
  return problems;
}

/** The verification key and both verifiers against what the zkey derives (export-artifacts.ts), each a phrase. */
async function derivationProblems(paths: ArtifactPaths): Promise<string[]> {
  const problems: string[] = [];
  const name = (file: string) => path.relative(paths.root, file);
  const vkeyText = await read(paths.vkey);
  const fromZkey: unknown = JSON.parse(JSON.stringify(await snarkjs.zKey.exportVerificationKey(paths.zkey)));
  if (vkeyText === undefined || !isDeepStrictEqual(JSON.parse(vkeyText), fromZkey)) problems.push(`${name(paths.vkey)} is not the verification key of ${name(paths.zkey)}`);
  if ((await read(paths.verifier)) !== (await generateVerifier(paths.zkey))) problems.push(`${name(paths.verifier)} is not the verifier of ${name(paths.zkey)}`);
  const batch = vkeyText === undefined ? undefined : await generateBatchVerifier(paths.vkey).catch(() => undefined);
  if ((await read(paths.batchVerifier)) !== batch) problems.push(`${name(paths.batchVerifier)} is not the batch verifier of ${name(paths.vkey)}`);
  return problems;
}

/** The committed transcript against the zkey and the manifest: it must end with this zkey and list its contributions. */
async function transcriptProblems(paths: ArtifactPaths, manifest: ArtifactManifest, carried: ZkeyContribution[]): Promise<{ transcript?: Transcript; problems: string[] }> {
  const record = manifest.phase2.transcript;
  if (record === null) return { problems: [] };
  const file = path.join(paths.root, record.file);
  if ((await sha256File(file).catch(() => "missing")) !== record.sha256) return { problems: [`${record.file} is not the transcript the manifest pins`] };
  const transcript = await readTranscript(file);
  const zkeySha256 = await sha256File(paths.zkey);
  const ends = latestZkey(transcript).sha256;
  return {
    transcript,
    problems: [
      ...chainProblems(transcript).map((problem) => `transcript: ${problem}`),
      ...(ends === zkeySha256 ? [] : [`the transcript ends with another zkey (SHA-256 ${ends.slice(0, 16)}...) than ${path.relative(paths.root, paths.zkey)} (${zkeySha256.slice(0, 16)}...)`]),
      ...contributionMismatches(carried, phaseTwoSteps(transcript)).map((problem) => `transcript against the zkey: ${problem}`),
      ...(transcript.r1csSha256 === manifest.r1csSha256 ? [] : ["the transcript's r1cs is not the manifest's"]),
      ...(transcript.phase1.sha256 === manifest.ptau.sha256 ? [] : ["the transcript's phase-1 file is not the manifest's"]),
    ],
  };
}

/**
 * Judges the proving key under `paths` from evidence no single edit can fake: the contributions and beacon the zkey
 * itself carries, the transcript whose steps chain to the zkey's hash, the phase-1 file's hash against the public
 * ones accepted (`accepted`, default KNOWN_PHASE1) and the known development ones, the verification key and both
 * verifiers derived again from the zkey and each pinned by the manifest. The manifest's own claims (its
 * `development` flag, its list of contributions) only count where the files agree with them.
 */
export async function assessProvingKey(paths: ArtifactPaths = artifactPaths(), accepted: AcceptedPhase1 = KNOWN_PHASE1): Promise<ProvingKeyAssessment> {
  const manifest = await readManifest(paths.manifest);
  const contributions = await readZkeyContributions(paths.zkey);
  const beacon = contributions.at(-1)?.beacon === undefined ? undefined : contributions.at(-1);
  const parties = contributions.filter((contribution) => contribution.beacon === undefined);
  const { transcript, problems } = await transcriptProblems(paths, manifest, contributions);
  const origin = phase1Origin(transcript?.phase1 ?? manifest.ptau, accepted);
  const recorded = [...manifest.phase2.contributions, ...(manifest.phase2.beacon === null ? [] : [manifest.phase2.beacon])];

  const inconsistencies = [
    ...(await pinProblems(paths, manifest)),
    ...(await derivationProblems(paths)),
    ...problems,
    ...(isDeepStrictEqual(recorded.map(({ name, hash }) => ({ name, hash })), contributions.map(({ name, hash }) => ({ name, hash })))
      ? []
      : [`the manifest lists ${plural(recorded.length, "contribution")} (${names(recorded)}), the zkey carries ${contributions.length} (${names(contributions)})`]),
    ...(manifest.ptau.development === !origin.public ? [] : [`the manifest calls its phase 1 ${manifest.ptau.development ? "development" : "public"}, but its hash makes it ${origin.text}`]),
  ];
  const lacks = productionLacks({ origin, parties: parties.length, beacon: beacon !== undefined, transcript: manifest.phase2.transcript !== null });
  const beaconText =
    beacon?.beacon === undefined ? "no beacon" : `beacon ${beacon.beacon.value.slice(0, 16)}... (2^${beacon.beacon.iterationsExp} iterations${manifest.phase2.beacon === null ? "" : `; ${manifest.phase2.beacon.source}`})`;
  const description = `${plural(parties.length, "phase-2 contribution")} (${names(parties)}), ${beaconText}; phase 1: ${origin.text}`;
  return { description, inconsistencies, lacks, contributions };
}

/** What keeps the key off a production chain, each a phrase: its inconsistencies, then what it lacks. */
export function productionShortfalls(assessment: ProvingKeyAssessment): string[] {
  return [...assessment.inconsistencies, ...assessment.lacks];
}


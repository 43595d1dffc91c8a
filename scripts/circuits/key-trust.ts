import { readFile } from "node:fs/promises";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import * as snarkjs from "snarkjs";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { chainProblems, contributionMismatches } from "../ceremony/chain.js";
import { fileHashes, KNOWN_PHASE1, ptauHeader } from "../ceremony/phase1.js";
import { keyPhase1Points, ptauPhase1Points, samePhase1Points, type Phase1Points } from "../ceremony/phase1-points.js";
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

/** A phase-1 file one party made, who may know its toxic waste: known by each hash a transcript can carry, and by its points. */
export interface DevelopmentPhase1 {
  description: string;
  sha256: string;
  blake2b?: string;
  /** The alpha and beta every key made from it carries, whatever its transcript says. */
  points: Phase1Points;
}

/**
 * Phase-1 files known to be development files: the ones this project's development keys were set up from.
 * `npm run circuits:setup` makes a new one each time it finds none; any file not proven public counts as development
 * whether listed here or not, this list only names it, and a key made from one of them is named by its own points.
 */
export const KNOWN_DEVELOPMENT_PHASE1: readonly DevelopmentPhase1[] = [
  {
    description: "the local power-15 file the first development key was set up from",
    sha256: "119bd03e86f33c069a41721ac4182d0b462b3483942c2ca056bb36c25be1714d",
    points: {
      alpha1: ["5592168535436428456966962950948608335721328635482294080137630456090296329776", "1763322754748672878380669810488564132407570556101009460206532482789560328485", "1"],
      beta2: [
        ["4846559972974208886610751182661091032148135886387229623290146399227813463866", "18028629733886947165567153017594474203231671291928731163580061074434890496929"],
        ["20424985289002922862573326105715211113848368230412872618625661423862794782843", "20330770209754234797700278258461176913684545041818810254082463940602925153007"],
        ["1", "0"],
      ],
    },
  },
  {
    description: "the local power-15 file of the development key with the refund anchor",
    sha256: "3a06095dbfe0fb63de48a695911cee4c2452431fab2a9f6f07486a002c0995f8",
    blake2b: "851a5e20e1d24752469b53f35d11e13a6cbdb18f8d4b548735190f9ed78bf20bd69a1217b9f5254e58e70711d796df77e87fe44370c8432b829fcd8bbc616db6",
    points: {
      alpha1: ["14657160463037057449127930035460367683530879197140840093060140244360590363493", "19109821116161541095241842730106814896361147053129874104181028596337756062303", "1"],
      beta2: [
        ["19626514077724795383068757398951127900639457557889352611427379600320251680380", "3911091752349822907378347820758290958093793477303842789602861602343150528991"],
        ["1437405364624899259051464327351793466101594234810404613194956723657551640562", "2484023025711813933161619940554342152669596331573987455930366174983768972395"],
        ["1", "0"],
      ],
    },
  },
];

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

/**
 * Where a phase 1 comes from by the hashes its record claims: an accepted public file, or a development one. A claim
 * only: what the ceremony's `finish` checks the file against, and what a manifest must agree with. The key's own
 * phase 1 is judged by its points (phase1OfKey).
 */
export function phase1Origin(ptau: { power: number; sha256: string; blake2b?: string }, accepted: AcceptedPhase1 = KNOWN_PHASE1): { public: boolean; text: string } {
  const known = accepted[ptau.power];
  if (known !== undefined && ptau.blake2b === known.blake2b) return { public: true, text: `the public ${known.file}` };
  const development = KNOWN_DEVELOPMENT_PHASE1.find((file) => file.sha256 === ptau.sha256 || (file.blake2b !== undefined && file.blake2b === ptau.blake2b));
  if (development !== undefined) return { public: false, text: `a development file (${development.description}; SHA-256 ${development.sha256.slice(0, 16)}...)` };
  return { public: false, text: `a development file: no public file of power ${ptau.power} has its hash (SHA-256 ${ptau.sha256.slice(0, 16)}...)` };
}

/**
 * Where the key's phase 1 comes from, by the alpha and beta the key itself carries (which no edit of a transcript
 * changes): a known development file's points name it; a public phase 1 is only ever one proven by its file
 * (`publicFile`): the BLAKE2b-512 its publisher states for its power, and the same alpha and beta as the key's.
 * Without the file the transcript's claim (`claimed`, phase1Origin) is not enough.
 */
export async function phase1OfKey(
  points: Phase1Points,
  claimed: { public: boolean; text: string },
  publicFile: string | undefined,
  accepted: AcceptedPhase1 = KNOWN_PHASE1,
): Promise<{ public: boolean; text: string }> {
  const development = KNOWN_DEVELOPMENT_PHASE1.find((file) => samePhase1Points(file.points, points));
  if (development !== undefined) return { public: false, text: `a development file (${development.description}), as the key's own alpha and beta show` };
  if (publicFile === undefined) {
    if (!claimed.public) return claimed;
    return { public: false, text: `${claimed.text} by its transcript's word only: name that file (PHASE1_PTAU) so that the key's alpha and beta are checked against it` };
  }
  const { power } = await ptauHeader(publicFile);
  const known = accepted[power];
  if (known === undefined || known.blake2b !== (await fileHashes(publicFile)).blake2b) {
    return { public: false, text: `a development file: ${path.basename(publicFile)} is no public phase 1 (no published file of power ${power} has its BLAKE2b-512)` };
  }
  if (!samePhase1Points(await ptauPhase1Points(publicFile), points)) {
    return { public: false, text: `another file than the public ${known.file}: the key's alpha and beta are not that file's` };
  }
  return { public: true, text: `the public ${known.file}, its alpha and beta checked against the key's` };
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

/** The verification key and both verifiers against what the zkey derives (`fromZkey`, export-artifacts.ts), each a phrase. */
async function derivationProblems(paths: ArtifactPaths, fromZkey: unknown): Promise<string[]> {
  const problems: string[] = [];
  const name = (file: string) => path.relative(paths.root, file);
  const vkeyText = await read(paths.vkey);
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

/** What the assessment is told beyond the checkout: the public phase-1 file, and which files count as public. */
export interface KeyAssessmentOptions {
  /** The public phase-1 file the key claims to come from (PHASE1_PTAU): without it no key is judged public. */
  publicPhase1File?: string;
  /** The public phase-1 files accepted, BLAKE2b-512 by power; default KNOWN_PHASE1. */
  accepted?: AcceptedPhase1;
}

/**
 * Judges the proving key under `paths` from evidence no single edit can fake: the contributions and beacon the zkey
 * itself carries, the transcript whose steps chain to the zkey's hash, the phase 1 by the alpha and beta the key
 * carries (phase1OfKey: a known development file's, or those of the public file named, its published hash checked),
 * the verification key and both verifiers derived again from the zkey and each pinned by the manifest. The
 * manifest's own claims (its `development` flag, its list of contributions) only count where the files agree with
 * them.
 */
export async function assessProvingKey(paths: ArtifactPaths = artifactPaths(), { publicPhase1File, accepted = KNOWN_PHASE1 }: KeyAssessmentOptions = {}): Promise<ProvingKeyAssessment> {
  const manifest = await readManifest(paths.manifest);
  const contributions = await readZkeyContributions(paths.zkey);
  const beacon = contributions.at(-1)?.beacon === undefined ? undefined : contributions.at(-1);
  const parties = contributions.filter((contribution) => contribution.beacon === undefined);
  const { transcript, problems } = await transcriptProblems(paths, manifest, contributions);
  const vkey: unknown = JSON.parse(JSON.stringify(await snarkjs.zKey.exportVerificationKey(paths.zkey)));
  // What the transcript (or the manifest) claims, which the key's own points then judge.
  const claimed = phase1Origin(transcript?.phase1 ?? manifest.ptau, accepted);
  const origin = await phase1OfKey(keyPhase1Points(vkey as Parameters<typeof keyPhase1Points>[0]), claimed, publicPhase1File, accepted);
  const recorded = [...manifest.phase2.contributions, ...(manifest.phase2.beacon === null ? [] : [manifest.phase2.beacon])];

  const inconsistencies = [
    ...(await pinProblems(paths, manifest)),
    ...(await derivationProblems(paths, vkey)),
    ...problems,
    ...(isDeepStrictEqual(recorded.map(({ name, hash }) => ({ name, hash })), contributions.map(({ name, hash }) => ({ name, hash })))
      ? []
      : [`the manifest lists ${plural(recorded.length, "contribution")} (${names(recorded)}), the zkey carries ${contributions.length} (${names(contributions)})`]),
    ...(manifest.ptau.development === !claimed.public ? [] : [`the manifest calls its phase 1 ${manifest.ptau.development ? "development" : "public"}, but its hash makes it ${claimed.text}`]),
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


import { copyFile, mkdir } from "node:fs/promises";
import path from "node:path";
import { artifactPaths, type ArtifactPaths } from "../../scripts/circuits/export-artifacts.js";
import { applyBeacon, contribute } from "../../scripts/ceremony/contribute.js";
import { writeCeremonyKey } from "../../scripts/ceremony/finish.js";
import { KNOWN_PHASE1 } from "../../scripts/ceremony/phase1.js";
import { latestZkey, readTranscript, TRANSCRIPT_FILE, writeTranscript } from "../../scripts/ceremony/transcript.js";
import { TINY_BEACON } from "./tiny-ceremony.js";

/**
 * A launch key one person forges from the committed development key, with the project's own ceremony steps: two
 * contributions and a beacon on top of the committed zkey and transcript, the transcript's phase 1 edited to claim
 * Hermez' public file of its power, then the files `finish` writes (skipping its verification against the phase-1
 * file, which would fail). Every hash, pin and derived verifier agrees; the key's alpha and beta are still the
 * development file's. Laid out as a checkout under `work`/checkout; `contributors`: the names it added.
 */
export async function forgeLaunchKey(work: string): Promise<{ paths: ArtifactPaths; contributors: string[] }> {
  const committed = artifactPaths();
  const dir = path.join(work, "ceremony");
  await mkdir(dir, { recursive: true });
  const transcriptFile = path.join(dir, TRANSCRIPT_FILE);
  await copyFile(committed.transcript, transcriptFile);
  await copyFile(committed.zkey, path.join(dir, latestZkey(await readTranscript(transcriptFile)).file));
  const say = () => {};
  // A key whose ceremony a beacon closed takes no more contributions: it is only dressed.
  const closed = (await readTranscript(transcriptFile)).steps.at(-1)?.kind === "beacon";
  const contributors = closed ? [] : ["Mallory", "Mallory's friend"];
  for (const name of contributors) await contribute({ dir, name, say });
  if (!closed) await applyBeacon({ dir, beacon: TINY_BEACON, say });

  const transcript = await readTranscript(transcriptFile);
  // Hermez' file of the key's power (or its smallest, for a key below it), as finish records a public phase 1.
  const power = KNOWN_PHASE1[transcript.phase1.power] === undefined ? Math.min(...Object.keys(KNOWN_PHASE1).map(Number)) : transcript.phase1.power;
  const hermez = KNOWN_PHASE1[power]!;
  await writeTranscript(transcriptFile, {
    ...transcript,
    phase1: { ...transcript.phase1, file: hermez.file, power, blake2b: hermez.blake2b, source: `Hermez ${hermez.file} (54 contributions and a beacon), published BLAKE2b-512 checked`, development: false },
  });
  const paths = artifactPaths(path.join(work, "checkout"));
  await writeCeremonyKey({ dir, wasm: committed.wasm, paths, say });
  return { paths, contributors };
}

import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { ARTIFACTS_DIR } from "../../sdk/circuit/artifacts.js";

/** What circuits/artifacts/manifest.json records: the keys in git are pinned to one compiled circuit. */
export interface ArtifactManifest {
  circuit: string;
  constraints: number;
  /** SHA-256 of the r1cs the zkey was set up for; a recompile must reproduce it. */
  r1csSha256: string;
  /** SHA-256 of each committed artifact, keyed by its path relative to the repository root. */
  files: Record<string, string>;
  ptau: { power: number; sha256: string; source: string };
  phase2: { contributions: string[] };
}

export const MANIFEST_PATH = path.join(ARTIFACTS_DIR, "manifest.json");

export async function readManifest(): Promise<ArtifactManifest> {
  return JSON.parse(await readFile(MANIFEST_PATH, "utf8")) as ArtifactManifest;
}

export async function writeManifest(manifest: ArtifactManifest): Promise<void> {
  await writeFile(MANIFEST_PATH, `${JSON.stringify(manifest, null, 2)}\n`);
}

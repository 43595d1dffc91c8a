import { copyFile, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import * as snarkjs from "snarkjs";
import { ARTIFACTS_DIR, WITHDRAW_ARTIFACTS, sha256File } from "../../sdk/circuit/artifacts.js";
import { BATCH_VERIFIER_PATH, generateBatchVerifier } from "./batch-verifier.js";
import { REPO_ROOT } from "./compile.js";
import { MANIFEST_PATH } from "./manifest.js";
import { generateVerifier, VERIFIER_PATH } from "./verifier.js";

/** Where a setup writes its outputs, under one root (the repository, or a test's folder laid out the same way). */
export interface ArtifactPaths {
  root: string;
  wasm: string;
  zkey: string;
  vkey: string;
  verifier: string;
  batchVerifier: string;
  manifest: string;
  /** The ceremony's transcript, kept beside the keys it made. */
  transcript: string;
}

export function artifactPaths(root: string = REPO_ROOT): ArtifactPaths {
  const under = (file: string) => path.join(root, path.relative(REPO_ROOT, file));
  return {
    root,
    wasm: under(WITHDRAW_ARTIFACTS.wasm),
    zkey: under(WITHDRAW_ARTIFACTS.zkey),
    vkey: under(WITHDRAW_ARTIFACTS.vkey),
    verifier: under(VERIFIER_PATH),
    batchVerifier: under(BATCH_VERIFIER_PATH),
    manifest: under(MANIFEST_PATH),
    transcript: under(path.join(ARTIFACTS_DIR, "withdraw.ceremony.json")),
  };
}

/**
 * Writes the keys of `zkey` and everything derived from them together: the zkey and the circuit's `wasm`, the
 * verification key, snarkjs' verifier inlined as a library (verifier.ts) and the batch verifier (batch-verifier.ts).
 * Returns the manifest's `files`: the SHA-256 of each by its path relative to the root, both verifiers among them
 * (the batch verifier's constants verify every relayBatch).
 */
export async function exportArtifacts(paths: ArtifactPaths, zkey: string, wasm: string): Promise<Record<string, string>> {
  for (const file of [paths.zkey, paths.verifier]) await mkdir(path.dirname(file), { recursive: true });
  await copyFile(zkey, paths.zkey);
  await copyFile(wasm, paths.wasm);
  const vkey = await snarkjs.zKey.exportVerificationKey(paths.zkey);
  await writeFile(paths.vkey, `${JSON.stringify(vkey, null, 2)}\n`);
  await writeFile(paths.verifier, await generateVerifier(paths.zkey));
  await writeFile(paths.batchVerifier, await generateBatchVerifier(paths.vkey));

  const files: Record<string, string> = {};
  for (const file of [paths.wasm, paths.zkey, paths.vkey, paths.verifier, paths.batchVerifier]) files[path.relative(paths.root, file)] = await sha256File(file);
  return files;
}

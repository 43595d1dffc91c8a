import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { SDK_ROOT } from "../sdk-root.js";

/** Files a prover and verifier need, all committed under sdk/artifacts (pinned by its manifest.json). */
export interface CircuitArtifacts {
  wasm: string;
  zkey: string;
  vkey: string;
}

/** The SDK owns the keys it proves with, so that its package ships them: the ceremony and setup write them here. */
export const ARTIFACTS_DIR = path.join(SDK_ROOT, "artifacts");

export const WITHDRAW_ARTIFACTS: CircuitArtifacts = {
  wasm: path.join(ARTIFACTS_DIR, "withdraw.wasm"),
  zkey: path.join(ARTIFACTS_DIR, "withdraw.zkey"),
  vkey: path.join(ARTIFACTS_DIR, "withdraw.vkey.json"),
};

/** SHA-256 (hex) of a file's bytes. */
export async function sha256File(file: string): Promise<string> {
  return createHash("sha256").update(await readFile(file)).digest("hex");
}

/** SHA-256 (hex) of the verification key file: how an agent and a facilitator tell that they prove the same circuit. */
export function verificationKeySha256(): Promise<string> {
  return sha256File(WITHDRAW_ARTIFACTS.vkey);
}

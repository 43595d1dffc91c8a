import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

/** Files a prover and verifier need, all committed under circuits/artifacts (pinned by its manifest.json). */
export interface CircuitArtifacts {
  wasm: string;
  zkey: string;
  vkey: string;
}

export const ARTIFACTS_DIR = fileURLToPath(new URL("../../circuits/artifacts/", import.meta.url));

export const WITHDRAW_ARTIFACTS: CircuitArtifacts = {
  wasm: `${ARTIFACTS_DIR}withdraw.wasm`,
  zkey: `${ARTIFACTS_DIR}withdraw.zkey`,
  vkey: `${ARTIFACTS_DIR}withdraw.vkey.json`,
};

/** SHA-256 (hex) of a file's bytes. */
export async function sha256File(file: string): Promise<string> {
  return createHash("sha256").update(await readFile(file)).digest("hex");
}

/** SHA-256 (hex) of the verification key file: how an agent and a facilitator tell that they prove the same circuit. */
export function verificationKeySha256(): Promise<string> {
  return sha256File(WITHDRAW_ARTIFACTS.vkey);
}

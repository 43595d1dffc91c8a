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

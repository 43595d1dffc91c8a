import path from "node:path";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { REPO_ROOT } from "./compile.js";
import type { ArtifactManifest } from "./manifest.js";
import { VERIFIER_PATH } from "./verifier.js";

/** Independent phase-2 contributions a production key needs: the key is sound if any one of them was honest. */
export const PRODUCTION_MIN_CONTRIBUTIONS = 3;

/**
 * What the proving key lacks for real funds, each as a phrase; empty when it has it all: a public phase 1, at
 * least PRODUCTION_MIN_CONTRIBUTIONS phase-2 contributions and a public random beacon after the last of them.
 */
export function productionShortfalls(manifest: ArtifactManifest): string[] {
  const { ptau, phase2 } = manifest;
  const count = phase2.contributions.length;
  return [
    ...(ptau.development ? [`its phase 1 is a development file (${ptau.source})`] : []),
    ...(count < PRODUCTION_MIN_CONTRIBUTIONS ? [`${count} phase-2 contribution${count === 1 ? "" : "s"}, ${PRODUCTION_MIN_CONTRIBUTIONS} needed`] : []),
    ...(phase2.beacon === null ? ["no random beacon after the last contribution"] : []),
  ];
}

/** What the proving key is, in one line: "development key, one party (...)" or its contributions and beacon. */
export function describeProvingKey(manifest: ArtifactManifest): string {
  const { ptau, phase2 } = manifest;
  const names = phase2.contributions.map((contribution) => contribution.name).join(", ");
  if (phase2.contributions.length === 1 && phase2.beacon === null) return `development key, one party (${names})`;
  const beacon =
    phase2.beacon === null ? "no beacon" : `beacon ${phase2.beacon.value.slice(0, 16)}... (2^${phase2.beacon.iterationsExp} iterations; ${phase2.beacon.source})`;
  return `${phase2.contributions.length} phase-2 contributions (${names}), ${beacon}; phase 1: ${ptau.development ? "development, " : ""}${ptau.source}`;
}

/**
 * The SHA-256 the manifest pins for contracts/verifiers/WithdrawalVerifier.sol (the verifier the pool inlines) and
 * the file's own: equal when the manifest describes the key the contracts are compiled with.
 */
export async function verifierHashes(manifest: ArtifactManifest): Promise<{ pinned: string | undefined; actual: string }> {
  return { pinned: manifest.files[path.relative(REPO_ROOT, VERIFIER_PATH)], actual: await sha256File(VERIFIER_PATH) };
}

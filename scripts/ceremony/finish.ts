import { copyFile } from "node:fs/promises";
import path from "node:path";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { artifactPaths, exportArtifacts, type ArtifactPaths } from "../circuits/export-artifacts.js";
import { describeProvingKey, productionShortfalls } from "../circuits/key-trust.js";
import { writeManifest, type ArtifactManifest } from "../circuits/manifest.js";
import type { CeremonyCircuit } from "./start.js";
import { latestZkey, phaseTwoSteps, TRANSCRIPT_FILE } from "./transcript.js";
import { verifyCeremony } from "./verify.js";

export interface FinishOptions {
  dir: string;
  ptau: string;
  circuit: CeremonyCircuit;
  /** Default: the repository's sdk/artifacts and contracts/verifiers. */
  paths?: ArtifactPaths;
  say: (line: string) => void;
}

/**
 * Verifies the ceremony in `dir` and, only if it verifies, writes its final zkey with everything derived from it
 * (verification key, inlined verifier, batch verifier, export-artifacts.ts), a copy of the transcript and the
 * manifest, which records every contribution's name and hash, the beacon and the transcript's hash.
 */
export async function finishCeremony({ dir, ptau, circuit, paths = artifactPaths(), say }: FinishOptions): Promise<ArtifactManifest> {
  const transcriptFile = path.join(dir, TRANSCRIPT_FILE);
  const { ok, transcript } = await verifyCeremony({ transcriptFile, ptau, r1cs: circuit.r1cs, say });
  if (!ok) throw new Error("the ceremony does not verify (see above); nothing was written");
  const steps = phaseTwoSteps(transcript);
  if (steps.length === 0) throw new Error("nobody has contributed yet: the initial zkey's secrets are known to all");

  say(`writing the keys, verifiers and manifest under ${paths.root}`);
  const files = await exportArtifacts(paths, path.join(dir, latestZkey(transcript).file), circuit.wasm);
  await copyFile(transcriptFile, paths.transcript);
  const beacon = steps.find((step) => step.kind === "beacon");
  const { phase1 } = transcript;
  const manifest: ArtifactManifest = {
    circuit: transcript.circuit,
    constraints: transcript.constraints,
    r1csSha256: transcript.r1csSha256,
    files,
    ptau: { power: phase1.power, sha256: phase1.sha256, blake2b: phase1.blake2b, source: phase1.source, development: phase1.development },
    phase2: {
      contributions: steps.filter((step) => step.kind === "contribution").map((step) => ({ name: step.name, hash: step.contributionHash })),
      beacon: beacon?.kind === "beacon" ? { name: beacon.name, hash: beacon.contributionHash, ...beacon.beacon } : null,
      transcript: { file: path.relative(paths.root, paths.transcript), sha256: await sha256File(paths.transcript) },
    },
  };
  await writeManifest(manifest, paths.manifest);

  say(`proving key: ${describeProvingKey(manifest)}`);
  const shortfalls = productionShortfalls(manifest);
  if (shortfalls.length > 0) say(`NOT for production chains (the deploy refuses it there): ${shortfalls.join("; ")}`);
  say("done: commit sdk/artifacts/ and contracts/verifiers/ together, and deploy a new pool (its verifier is inlined)");
  return manifest;
}

import { copyFile } from "node:fs/promises";
import path from "node:path";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { artifactPaths, exportArtifacts, type ArtifactPaths } from "../circuits/export-artifacts.js";
import { assessProvingKey, phase1Origin, productionLacks } from "../circuits/key-trust.js";
import { writeManifest, type ArtifactManifest } from "../circuits/manifest.js";
import type { CeremonyCircuit } from "./start.js";
import { latestZkey, phaseTwoSteps, readTranscript, TRANSCRIPT_FILE } from "./transcript.js";
import { verifyCeremony } from "./verify.js";

/** A ceremony that makes a development key, finished without saying a development key is what is wanted. */
export class DevelopmentKeyError extends Error {
  constructor(lacks: string[]) {
    super(
      `this ceremony makes a development key, refused on production chains (${lacks.join("; ")}): nothing was written. ` +
        "Add the missing contributions and the beacon, or pass --development to write it as a development key.",
    );
    this.name = "DevelopmentKeyError";
  }
}

export interface FinishOptions {
  dir: string;
  ptau: string;
  circuit: CeremonyCircuit;
  /** Write the key although it lacks what production needs (a public phase 1, three contributions, a beacon). */
  development: boolean;
  /** Default: the repository's sdk/artifacts and contracts/verifiers. */
  paths?: ArtifactPaths;
  say: (line: string) => void;
}

/**
 * Verifies the ceremony in `dir` and, only if it verifies, writes its final zkey with everything derived from it
 * (verification key, inlined verifier, batch verifier, export-artifacts.ts), a copy of the transcript and the
 * manifest, which records every contribution's name and hash, the beacon and the transcript's hash. A key that
 * production would refuse is written only with `development`, and the last line says what it is.
 */
export async function finishCeremony({ dir, ptau, circuit, development, paths = artifactPaths(), say }: FinishOptions): Promise<ArtifactManifest> {
  const transcriptFile = path.join(dir, TRANSCRIPT_FILE);
  const planned = await readTranscript(transcriptFile);
  const plannedSteps = phaseTwoSteps(planned);
  if (plannedSteps.length === 0) throw new Error("nobody has contributed yet: the initial zkey's secrets are known to all");
  const lacks = productionLacks({
    origin: phase1Origin(planned.phase1),
    parties: plannedSteps.filter((step) => step.kind === "contribution").length,
    beacon: plannedSteps.at(-1)?.kind === "beacon",
    transcript: true,
  });
  if (lacks.length > 0 && !development) throw new DevelopmentKeyError(lacks);

  const { ok } = await verifyCeremony({ transcriptFile, ptau, r1cs: circuit.r1cs, say });
  if (!ok) throw new Error("the ceremony does not verify (see above); nothing was written");
  const manifest = await writeCeremonyKey({ dir, wasm: circuit.wasm, paths, say });

  // What the deploy will say of it, judged from the files just written.
  const assessment = await assessProvingKey(paths, { publicPhase1File: ptau });
  if (assessment.inconsistencies.length > 0) throw new Error(`the written files disagree: ${assessment.inconsistencies.join("; ")}`);
  say(`proving key: ${assessment.description}`);
  if (assessment.lacks.length > 0) {
    say(`done: a DEVELOPMENT key, NOT for production chains (the deploy refuses it there): ${assessment.lacks.join("; ")}`);
  } else {
    say("done: commit sdk/artifacts/ and contracts/verifiers/ together, and deploy a new pool (its verifier is inlined)");
  }
  return manifest;
}

/**
 * What finish writes for the ceremony in `dir`, once verified: its last zkey with everything derived from it, a copy
 * of its transcript, and the manifest recording them.
 */
export async function writeCeremonyKey({ dir, wasm, paths, say }: { dir: string; wasm: string; paths: ArtifactPaths; say: (line: string) => void }): Promise<ArtifactManifest> {
  const transcriptFile = path.join(dir, TRANSCRIPT_FILE);
  const transcript = await readTranscript(transcriptFile);
  const steps = phaseTwoSteps(transcript);
  say(`writing the keys, verifiers and manifest under ${paths.root}`);
  const files = await exportArtifacts(paths, path.join(dir, latestZkey(transcript).file), wasm);
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
  return manifest;
}

import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { ARTIFACTS_DIR } from "../../sdk/circuit/artifacts.js";

const Sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, "must be a SHA-256 in lower-case hex");
/** snarkjs' contribution hashes and phase-1 file hashes are BLAKE2b-512. */
export const Blake2bSchema = z.string().regex(/^[0-9a-f]{128}$/, "must be a BLAKE2b-512 hash in lower-case hex");

/** One phase-2 contribution: the party's name and the contribution hash snarkjs printed for it. */
export const ContributionRecordSchema = z.object({ name: z.string().min(1), hash: Blake2bSchema }).strict();

/** The public random beacon applied after the last contribution: its value and 2^iterationsExp hash iterations. */
export const BeaconRecordSchema = z
  .object({
    name: z.string().min(1),
    hash: Blake2bSchema,
    value: z.string().regex(/^[0-9a-f]+$/, "must be lower-case hex"),
    iterationsExp: z.number().int().min(10).max(63),
    /** Where the value came from and when it was announced, for a reader to check it was unknowable in advance. */
    source: z.string().min(1),
  })
  .strict();

/** What sdk/artifacts/manifest.json records: the keys in git are pinned to one compiled circuit and ceremony. */
export const ArtifactManifestSchema = z
  .object({
    circuit: z.string().min(1),
    constraints: z.number().int().positive(),
    /** SHA-256 of the r1cs the zkey was set up for; a recompile must reproduce it. */
    r1csSha256: Sha256Schema,
    /** SHA-256 of each committed artifact, keyed by its path relative to the repository root. */
    files: z.record(z.string(), Sha256Schema),
    ptau: z
      .object({
        power: z.number().int().positive(),
        sha256: Sha256Schema,
        /** The hash public ceremonies publish; absent where the file is gone (the first development key). */
        blake2b: Blake2bSchema.optional(),
        source: z.string().min(1),
        /** True unless the file is a public ceremony's, checked against its published hash. */
        development: z.boolean(),
      })
      .strict(),
    phase2: z
      .object({
        /** The contributions in order, the beacon not among them. */
        contributions: z.array(ContributionRecordSchema).min(1),
        beacon: BeaconRecordSchema.nullable(),
        /** The ceremony's transcript (`npm run ceremony -- verify` re-checks it); null where none was kept. */
        transcript: z.object({ file: z.string().min(1), sha256: Sha256Schema }).strict().nullable(),
      })
      .strict(),
  })
  .strict();

export type ArtifactManifest = z.infer<typeof ArtifactManifestSchema>;
export type ContributionRecord = z.infer<typeof ContributionRecordSchema>;
export type BeaconRecord = z.infer<typeof BeaconRecordSchema>;

export const MANIFEST_PATH = path.join(ARTIFACTS_DIR, "manifest.json");

export async function readManifest(file: string = MANIFEST_PATH): Promise<ArtifactManifest> {
  return ArtifactManifestSchema.parse(JSON.parse(await readFile(file, "utf8")));
}

export async function writeManifest(manifest: ArtifactManifest, file: string = MANIFEST_PATH): Promise<void> {
  await writeFile(file, `${JSON.stringify(ArtifactManifestSchema.parse(manifest), null, 2)}\n`);
}

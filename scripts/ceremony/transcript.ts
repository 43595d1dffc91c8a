import { readFile, rename, writeFile } from "node:fs/promises";
import { z } from "zod";
import { Blake2bSchema } from "../circuits/manifest.js";

const Sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, "must be a SHA-256 in lower-case hex");
/** A zkey of the ceremony: its file name (in the ceremony's folder) and SHA-256. */
const ZkeyFileSchema = z.object({ file: z.string().regex(/^[\w.-]+\.zkey$/, "must be a .zkey file name"), sha256: Sha256Schema }).strict();

/** A contributor's name as snarkjs stores it (at most 64 characters), printable. */
export const ContributorNameSchema = z
  .string()
  .min(1)
  .max(64)
  .refine((name) => !/\p{Cc}/u.test(name) && name.trim() === name, { message: "must be printable, without surrounding spaces" });

const StartStepSchema = z.object({ kind: z.literal("start"), at: z.iso.datetime(), output: ZkeyFileSchema }).strict();
const ContributionStepSchema = z
  .object({
    kind: z.literal("contribution"),
    at: z.iso.datetime(),
    name: ContributorNameSchema,
    input: ZkeyFileSchema,
    output: ZkeyFileSchema,
    /** snarkjs' contribution hash, which the contributor publishes on their own so others can find it here. */
    contributionHash: Blake2bSchema,
  })
  .strict();
export const BeaconSchema = z
  .object({
    /** The beacon's value as hex, at most 255 bytes (snarkjs' limit). */
    value: z.string().regex(/^([0-9a-f]{2}){1,255}$/, "must be 1 to 255 bytes of lower-case hex"),
    iterationsExp: z.number().int().min(10).max(63),
    source: z.string().min(1),
  })
  .strict();
const BeaconStepSchema = ContributionStepSchema.extend({ kind: z.literal("beacon"), beacon: BeaconSchema }).strict();

export const TranscriptSchema = z
  .object({
    format: z.literal("x402-privacy-facilitator/ceremony-transcript/1"),
    circuit: z.string().min(1),
    r1csSha256: Sha256Schema,
    constraints: z.number().int().positive(),
    phase1: z
      .object({
        file: z.string().min(1),
        power: z.number().int().positive(),
        blake2b: Blake2bSchema,
        sha256: Sha256Schema,
        source: z.string().min(1),
        development: z.boolean(),
      })
      .strict(),
    steps: z.array(z.discriminatedUnion("kind", [StartStepSchema, ContributionStepSchema, BeaconStepSchema])).min(1),
  })
  .strict();

export type Transcript = z.infer<typeof TranscriptSchema>;
export type TranscriptStep = Transcript["steps"][number];
export type PhaseTwoStep = Exclude<TranscriptStep, { kind: "start" }>;
export type Beacon = z.infer<typeof BeaconSchema>;

export const TRANSCRIPT_FILE = "transcript.json";

export async function readTranscript(file: string): Promise<Transcript> {
  const text = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    throw error.code === "ENOENT" ? new Error(`${file} does not exist: no ceremony there (start one, or name its folder with --dir)`) : error;
  });
  return TranscriptSchema.parse(JSON.parse(text));
}

/** Writes the transcript whole or not at all (a rename), so an interrupted step leaves the previous one. */
export async function writeTranscript(file: string, transcript: Transcript): Promise<void> {
  const partial = `${file}.partial`;
  await writeFile(partial, `${JSON.stringify(TranscriptSchema.parse(transcript), null, 2)}\n`);
  await rename(partial, file);
}

/** The contributions and the beacon, in order. */
export function phaseTwoSteps(transcript: Transcript): PhaseTwoStep[] {
  return transcript.steps.filter((step): step is PhaseTwoStep => step.kind !== "start");
}

/** The zkey the next step starts from: the last step's output. */
export function latestZkey(transcript: Transcript): z.infer<typeof ZkeyFileSchema> {
  return transcript.steps[transcript.steps.length - 1]!.output;
}

/** The name of the zkey the next step writes: <circuit>_<step number, 4 digits>.zkey. */
export function nextZkeyFile(transcript: Transcript): string {
  return `${transcript.circuit}_${String(transcript.steps.length).padStart(4, "0")}.zkey`;
}

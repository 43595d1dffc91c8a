// The trusted-setup ceremony of the withdrawal circuit, one step per run (docs/trusted-setup.md):
//
//   npm run ceremony -- start      --ptau <public phase-1 file> [--dir build/ceremony]
//   npm run ceremony -- contribute --name "<party>" [--entropy] [--dir ...]       each party, on its own machine
//   npm run ceremony -- beacon     --value <hex> --iterations <10-63> --source "<where the value came from>" [--name ...]
//   npm run ceremony -- verify     --ptau <file> [--dir ... | --transcript <file> [--zkey <final zkey>]]
//   npm run ceremony -- finish     --ptau <file> [--root <checkout>]             writes sdk/artifacts + verifiers
//
// Development only: `dev-phase1 --power 15 --out build/ptau/pot15_final.ptau`, then `start --development --ptau ...`;
// `finish` writes a key without a public phase 1, three contributions and a beacon only with --development.
// The circuit is compiled from this checkout unless --r1cs (and, for finish, --wasm) name compiled files.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { releaseProverThreads } from "../../sdk/circuit/prover.js";
import { CIRCUIT_CONFIG } from "../../sdk/circuit/config.js";
import { compileCircuit, REPO_ROOT } from "../circuits/compile.js";
import { artifactPaths } from "../circuits/export-artifacts.js";
import { stopwatchPrinter } from "../circuits/progress.js";
import { applyBeacon, contribute } from "./contribute.js";
import { readExtraEntropy } from "./entropy.js";
import { finishCeremony } from "./finish.js";
import { createDevelopmentPhase1 } from "./phase1.js";
import { startCeremony, type CeremonyCircuit } from "./start.js";
import { TRANSCRIPT_FILE } from "./transcript.js";
import { verifyCeremony } from "./verify.js";

const STEPS = ["dev-phase1", "start", "contribute", "beacon", "verify", "finish"] as const;
type Step = (typeof STEPS)[number];

const OPTIONS = {
  dir: { type: "string", default: path.join(REPO_ROOT, "build", "ceremony") },
  ptau: { type: "string" },
  development: { type: "boolean", default: false },
  r1cs: { type: "string" },
  wasm: { type: "string" },
  name: { type: "string" },
  entropy: { type: "boolean", default: false },
  value: { type: "string" },
  iterations: { type: "string" },
  source: { type: "string" },
  transcript: { type: "string" },
  zkey: { type: "string" },
  root: { type: "string" },
  power: { type: "string" },
  out: { type: "string" },
  help: { type: "boolean", default: false },
} as const;

class UsageError extends Error {}

function required(value: string | undefined, option: string): string {
  if (value === undefined || value === "") throw new UsageError(`--${option} is required`);
  return value;
}

function integer(value: string, option: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`--${option} must be a whole number`);
  return Number(value);
}

/**
 * The circuit's compiled files: --r1cs/--wasm, or this checkout's circuit compiled into a folder of its own that
 * `cleanup` removes.
 */
async function circuitFiles(r1cs: string | undefined, wasm: string | undefined, say: (line: string) => void) {
  if (r1cs !== undefined) {
    const circuit: CeremonyCircuit = { name: path.basename(r1cs, ".r1cs"), r1cs: path.resolve(r1cs), wasm: wasm === undefined ? "" : path.resolve(wasm) };
    return { circuit, cleanup: async () => {} };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), "ceremony-circuit-"));
  say(`compiling ${CIRCUIT_CONFIG.name} from this checkout (circom2 --${CIRCUIT_CONFIG.optimization})`);
  const compiled = await compileCircuit(dir);
  return { circuit: { name: CIRCUIT_CONFIG.name, r1cs: compiled.r1cs, wasm: compiled.wasm }, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

const parse = (args: string[]) => parseArgs({ args, options: OPTIONS, allowPositionals: true });
type Values = ReturnType<typeof parse>["values"];

/** Runs one step; false when a verification failed (the checks say why). */
async function run(step: Step, values: Values): Promise<boolean> {
  const say = stopwatchPrinter(step);
  const dir = path.resolve(values.dir);
  switch (step) {
    case "dev-phase1": {
      await createDevelopmentPhase1(integer(required(values.power, "power"), "power"), path.resolve(required(values.out, "out")), say);
      return true;
    }
    case "start": {
      const ptau = path.resolve(required(values.ptau, "ptau"));
      const { circuit, cleanup } = await circuitFiles(values.r1cs, values.wasm, say);
      try {
        await startCeremony({ dir, ptau, development: values.development, circuit, say });
      } finally {
        await cleanup();
      }
      return true;
    }
    case "contribute": {
      const extraEntropy = values.entropy ? await readExtraEntropy(say) : undefined;
      await contribute({ dir, name: required(values.name, "name"), extraEntropy, say });
      return true;
    }
    case "beacon": {
      const beacon = {
        value: required(values.value, "value").replace(/^0x/, "").toLowerCase(),
        iterationsExp: integer(required(values.iterations, "iterations"), "iterations"),
        source: required(values.source, "source"),
      };
      await applyBeacon({ dir, beacon, ...(values.name !== undefined && { name: values.name }), say });
      return true;
    }
    case "verify":
    case "finish": {
      const ptau = path.resolve(required(values.ptau, "ptau"));
      if (step === "finish" && values.r1cs !== undefined && values.wasm === undefined) throw new UsageError("--wasm is required with --r1cs");
      const { circuit, cleanup } = await circuitFiles(values.r1cs, values.wasm, say);
      try {
        if (step === "finish") {
          await finishCeremony({ dir, ptau, circuit, development: values.development, paths: artifactPaths(path.resolve(values.root ?? REPO_ROOT)), say });
          return true;
        }
        const transcriptFile = path.resolve(values.transcript ?? path.join(dir, TRANSCRIPT_FILE));
        const { ok } = await verifyCeremony({ transcriptFile, ptau, r1cs: circuit.r1cs, ...(values.zkey !== undefined && { zkey: path.resolve(values.zkey) }), say });
        say(ok ? "the ceremony verifies" : "the ceremony does NOT verify");
        return ok;
      } finally {
        await cleanup();
      }
    }
  }
}

const usage = `usage: npm run ceremony -- <${STEPS.join("|")}> [options]; see docs/trusted-setup.md`;

async function main(): Promise<void> {
  const { values, positionals } = parse(process.argv.slice(2));
  const step = positionals[0] as Step | undefined;
  if (values.help || step === undefined || !STEPS.includes(step) || positionals.length > 1) {
    console.log(usage);
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  try {
    process.exitCode = (await run(step, values)) ? 0 : 1;
  } finally {
    await releaseProverThreads();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? `${error instanceof UsageError ? "" : "ceremony: "}${error.message}` : error);
  if (error instanceof UsageError) console.error(usage);
  process.exitCode = error instanceof UsageError ? 2 : 1;
});

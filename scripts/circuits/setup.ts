// Development trusted setup for the withdrawal circuit, end to end, as a one-party ceremony (scripts/ceremony):
//   compile -> phase 1 (a local development file made once and reused, or PTAU_FILE) -> the initial zkey -> one
//   contribution -> verify -> zkey, verification key, verifiers (single and batch), transcript and manifest.
//
// The key is a development key: one party made it, and the deploy refuses it on production chains. Production
// keys come from `npm run ceremony` with independent parties and a public phase 1 (docs/trusted-setup.md).
import { rm, stat } from "node:fs/promises";
import path from "node:path";
import { CIRCUIT_CONFIG } from "../../sdk/circuit/config.js";
import { releaseProverThreads } from "../../sdk/circuit/prover.js";
import { contribute } from "../ceremony/contribute.js";
import { finishCeremony } from "../ceremony/finish.js";
import { createDevelopmentPhase1 } from "../ceremony/phase1.js";
import { startCeremony } from "../ceremony/start.js";
import { compileCircuit, REPO_ROOT } from "./compile.js";
import { stopwatchPrinter } from "./progress.js";

const BUILD_DIR = path.join(REPO_ROOT, "build");

async function main(): Promise<void> {
  const say = stopwatchPrinter("setup");
  const { name, ptauPower, optimization } = CIRCUIT_CONFIG;
  say(`compiling ${name} (circom2 --${optimization})`);
  const compiled = await compileCircuit();
  const circuit = { name, r1cs: compiled.r1cs, wasm: compiled.wasm };

  const ptau = process.env.PTAU_FILE ? path.resolve(process.env.PTAU_FILE) : path.join(BUILD_DIR, "ptau", `pot${ptauPower}_final.ptau`);
  if (process.env.PTAU_FILE || (await stat(ptau).then(() => true, () => false))) say(`phase 1: ${path.relative(REPO_ROOT, ptau)}`);
  else await createDevelopmentPhase1(ptauPower, ptau, say);

  const dir = path.join(BUILD_DIR, "setup");
  await rm(dir, { recursive: true, force: true });
  await startCeremony({ dir, ptau, development: true, circuit, say });
  await contribute({ dir, name: "dev phase-2 contribution", say });
  await finishCeremony({ dir, ptau, circuit, development: true, say });
  await rm(dir, { recursive: true });
  await releaseProverThreads();
}

await main();

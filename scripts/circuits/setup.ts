// Development trusted setup for the withdrawal circuit, end to end:
//   compile -> powers of tau (phase 1, local; or PTAU_FILE) -> phase-2 zkey with one contribution ->
//   verification key -> generated Solidity verifiers (single and batch) -> circuits/artifacts + manifest.json.
//
// The local phase 1 is for development only: its toxic waste existed on this machine. Production swaps in a
// public phase-1 file and a multi-party phase 2 (see docs/trusted-setup.md).
import { randomBytes } from "node:crypto";
import { copyFile, mkdir, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import * as snarkjs from "snarkjs";
import type { Logger } from "snarkjs";
import { CIRCUIT_CONFIG } from "../../sdk/circuit/config.js";
import { WITHDRAW_ARTIFACTS, sha256File } from "../../sdk/circuit/artifacts.js";
import { releaseProverThreads } from "../../sdk/circuit/prover.js";
import { compileCircuit, REPO_ROOT } from "./compile.js";
import { writeManifest } from "./manifest.js";
import { BATCH_VERIFIER_PATH, generateBatchVerifier } from "./batch-verifier.js";
import { generateVerifier, VERIFIER_PATH } from "./verifier.js";

const BUILD_DIR = path.join(REPO_ROOT, "build");
const PTAU_DIR = path.join(BUILD_DIR, "ptau");

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(5)}s`;
const say = (msg: string) => console.log(`[setup ${elapsed()}] ${msg}`);

/** snarkjs reports progress through debug lines; show at most one every few seconds so long steps show life. */
function progressLogger(): Logger {
  let last = 0;
  return {
    info: (msg) => say(`  ${msg}`),
    warn: (msg) => say(`  warning: ${msg}`),
    error: (msg) => say(`  error: ${msg}`),
    debug: (msg) => {
      if (Date.now() - last > 5000) {
        last = Date.now();
        say(`  ${msg}`);
      }
    },
  };
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

const entropy = () => randomBytes(32).toString("hex");

/** A prepared phase-1 file: PTAU_FILE when the operator gives one, else a local one made once and reused. */
async function phase1(power: number): Promise<{ file: string; source: string }> {
  if (process.env.PTAU_FILE) {
    return { file: path.resolve(process.env.PTAU_FILE), source: `operator-supplied ${path.basename(process.env.PTAU_FILE)}` };
  }
  const final = path.join(PTAU_DIR, `pot${power}_final.ptau`);
  const source = `local development ceremony, power ${power}, one contribution`;
  if (await exists(final)) {
    say(`phase 1: reusing ${path.relative(REPO_ROOT, final)}`);
    return { file: final, source };
  }
  await mkdir(PTAU_DIR, { recursive: true });
  const initial = path.join(PTAU_DIR, `pot${power}_0000.ptau`);
  const contributed = path.join(PTAU_DIR, `pot${power}_0001.ptau`);
  const curve = await snarkjs.curves.getCurveFromName("bn128");
  say(`phase 1: new accumulator, power ${power}`);
  await snarkjs.powersOfTau.newAccumulator(curve, power, initial, progressLogger());
  say("phase 1: contribution");
  await snarkjs.powersOfTau.contribute(initial, contributed, "dev phase-1 contribution", entropy(), progressLogger());
  say("phase 1: prepare phase 2 (the long step: ~15 min at power 15 on 2 cores)");
  await snarkjs.powersOfTau.preparePhase2(contributed, final, progressLogger());
  return { file: final, source };
}

async function main(): Promise<void> {
  const { name, ptauPower } = CIRCUIT_CONFIG;
  say(`compiling ${name} (circom2 --${CIRCUIT_CONFIG.optimization})`);
  const compiled = await compileCircuit();
  const info = await snarkjs.r1cs.info(compiled.r1cs);
  say(`${info.nConstraints} constraints (power ${ptauPower} serves up to ${2 ** ptauPower})`);
  if (info.nConstraints >= 2 ** ptauPower) throw new Error(`circuit too large for power ${ptauPower}`);

  const ptau = await phase1(ptauPower);

  const zkeyDir = path.join(BUILD_DIR, "zkey");
  await mkdir(zkeyDir, { recursive: true });
  const zkey0 = path.join(zkeyDir, `${name}_0000.zkey`);
  const zkey1 = path.join(zkeyDir, `${name}_0001.zkey`);
  say("phase 2: circuit-specific zkey");
  await snarkjs.zKey.newZKey(compiled.r1cs, ptau.file, zkey0, progressLogger());
  const contribution = "dev phase-2 contribution";
  say(`phase 2: ${contribution}`);
  await snarkjs.zKey.contribute(zkey0, zkey1, contribution, entropy(), progressLogger());

  say("exporting verification key, verifier and artifacts");
  await mkdir(path.dirname(WITHDRAW_ARTIFACTS.zkey), { recursive: true });
  await copyFile(zkey1, WITHDRAW_ARTIFACTS.zkey);
  await copyFile(compiled.wasm, WITHDRAW_ARTIFACTS.wasm);
  const vkey = await snarkjs.zKey.exportVerificationKey(WITHDRAW_ARTIFACTS.zkey);
  await writeFile(WITHDRAW_ARTIFACTS.vkey, `${JSON.stringify(vkey, null, 2)}\n`);
  await mkdir(path.dirname(VERIFIER_PATH), { recursive: true });
  await writeFile(VERIFIER_PATH, await generateVerifier(WITHDRAW_ARTIFACTS.zkey));
  await writeFile(BATCH_VERIFIER_PATH, await generateBatchVerifier(WITHDRAW_ARTIFACTS.vkey));
  await rm(zkeyDir, { recursive: true });

  const pinned = [WITHDRAW_ARTIFACTS.wasm, WITHDRAW_ARTIFACTS.zkey, WITHDRAW_ARTIFACTS.vkey, VERIFIER_PATH];
  const files: Record<string, string> = {};
  for (const file of pinned) files[path.relative(REPO_ROOT, file)] = await sha256File(file);
  await writeManifest({
    circuit: name,
    constraints: info.nConstraints,
    r1csSha256: await sha256File(compiled.r1cs),
    files,
    ptau: { power: ptauPower, sha256: await sha256File(ptau.file), source: ptau.source },
    phase2: { contributions: [contribution] },
  });
  say("done: circuits/artifacts/ and contracts/verifiers/; commit them with manifest.json");
  await releaseProverThreads();
}

await main();

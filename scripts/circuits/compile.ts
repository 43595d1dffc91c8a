import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CIRCUIT_CONFIG } from "../../sdk/circuit/config.js";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const DEFAULT_BUILD_DIR = path.join(REPO_ROOT, "build", "circuits");

export interface CompiledCircuit {
  r1cs: string;
  wasm: string;
  sym: string;
}

const require = createRequire(import.meta.url);

/**
 * The main component is generated from sdk/circuit/circuit.config.json, so the template parameters and the list of
 * public inputs live in one place. The include is resolved through the library path (-l REPO_ROOT), so the
 * output does not depend on where it is written.
 */
function mainComponentSource(): string {
  const { file, template, params, publicInputs } = CIRCUIT_CONFIG;
  return [
    "pragma circom 2.1.9;",
    `include "circuits/${file}";`,
    `component main {public [${publicInputs.join(", ")}]} = ${template}(${Object.values(params).join(", ")});`,
    "",
  ].join("\n");
}

function run(command: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(args[0] ?? command)} exited with code ${code}`)),
    );
  });
}

/**
 * Compiles the main component in `mainFile` with circom2 (WASM build of circom 2) into `outDir`. Includes resolve
 * from the repository root and node_modules.
 */
export async function compileCircom(mainFile: string, outDir: string, optimization: string): Promise<CompiledCircuit> {
  const name = path.basename(mainFile, ".circom");
  const circom = require.resolve("circom2/cli.js");
  await run(
    process.execPath,
    [circom, mainFile, "--r1cs", "--wasm", "--sym", `--${optimization}`, "-l", REPO_ROOT, "-l", path.join(REPO_ROOT, "node_modules"), "-o", outDir],
    REPO_ROOT,
  );
  return {
    r1cs: path.join(outDir, `${name}.r1cs`),
    wasm: path.join(outDir, `${name}_js`, `${name}.wasm`),
    sym: path.join(outDir, `${name}.sym`),
  };
}

/** Compiles the withdrawal circuit into `outDir`. */
export async function compileCircuit(outDir: string = DEFAULT_BUILD_DIR): Promise<CompiledCircuit> {
  const { name, optimization } = CIRCUIT_CONFIG;
  await mkdir(outDir, { recursive: true });
  const mainFile = path.join(outDir, `${name}.circom`);
  await writeFile(mainFile, mainComponentSource());
  return compileCircom(mainFile, outDir, optimization);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const compiled = await compileCircuit();
  console.log(`compiled: ${compiled.r1cs}`);
}

// Builds the native Groth16 prover (C++, src/ beside this file) into build/native-prover/groth16-prover of the SDK's
// folder (sdk/ in the repository, the package's folder once installed), where sdk/prover/native-process.ts looks for
// it, with the system C++ compiler. Run at install (the repository's postinstall, and the SDK package's own) and by
// hand (`node sdk/native-prover/build.mjs`).
//
// Never fails the install: without a compiler, or when the build fails, it says so and exits 0; the SDK (and the
// relayer) then prove with the wasm engine and say which prover runs. GROTH16_PROVER_CXX names the compiler
// (default: $CXX, else g++); pointing it at a missing one is how the tests simulate a machine without a compiler.
import { execFile } from "node:child_process";
import { mkdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(here);
const sources = path.join(here, "src");
// GROTH16_PROVER_OUT: another output folder (the tests build there, leaving the installed binary alone).
const outDir = process.env.GROTH16_PROVER_OUT ? path.resolve(process.env.GROTH16_PROVER_OUT) : path.join(root, "build/native-prover");
const binary = path.join(outDir, "groth16-prover");
const compiler = process.env.GROTH16_PROVER_CXX || process.env.CXX || "g++";
// Portable x86-64 code everywhere (no -march=native): the BMI2/ADX kernels are a second copy, chosen at run time.
const FLAGS = ["-O3", "-std=c++17", "-pthread", "-funroll-loops"];
const UNITS = [
  { source: "kernels.cpp", object: "kernels-portable.o", flags: ["-DKERNEL_NS=portable"] },
  { source: "kernels.cpp", object: "kernels-bmi2adx.o", flags: ["-DKERNEL_NS=bmi2adx", "-mbmi2", "-madx"] },
  { source: "key-files.cpp", object: "key-files.o", flags: [] },
  { source: "key-cache.cpp", object: "key-cache.o", flags: [] },
  { source: "main.cpp", object: "main.o", flags: [] },
];

async function build() {
  await mkdir(outDir, { recursive: true });
  const objects = await Promise.all(
    UNITS.map(async ({ source, object, flags }) => {
      const out = path.join(outDir, object);
      await run(compiler, [...FLAGS, ...flags, "-c", path.join(sources, source), "-o", out]);
      return out;
    }),
  );
  // Linked under a temporary name: a failed link never leaves a half-written binary where the SDK looks.
  const linking = `${binary}.partial`;
  await run(compiler, ["-pthread", ...objects, "-o", linking]);
  await rename(linking, binary);
  await Promise.all(objects.map((object) => rm(object, { force: true })));
}

const started = Date.now();
try {
  await build();
  console.log(`native prover: built ${path.relative(root, binary)} with ${compiler} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (error) {
  // A stale binary from an earlier build would not match these sources: remove it so that proofs use wasm.
  await rm(binary, { force: true });
  const reason = error?.code === "ENOENT" ? `no compiler ${compiler}` : String(error?.stderr || error?.message || error).split("\n").slice(0, 5).join("\n");
  console.log(`native prover: not built (${reason}); proofs will use the wasm engine`);
}

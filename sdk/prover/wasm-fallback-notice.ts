/** The code of the process warning the SDK emits when it proves with the wasm engine for want of a native prover. */
export const WASM_FALLBACK_WARNING = "X402_PRIVACY_SDK_WASM_PROVER";

let told = false;

/**
 * Says once per process, on stderr as a Node process warning (`process.on("warning")` sees it, `--no-warnings`
 * hides it), that proofs fall back to the wasm engine because no native prover was built at install, and how to
 * build it. The SDK works either way: the wasm engine makes the same proofs, several times slower.
 */
export function tellWasmFallbackOnce(): void {
  if (told) return;
  told = true;
  process.emitWarning(
    "x402-privacy-sdk proves with the wasm engine: no native prover was built when it was installed. Payments work, each proof takes seconds instead of a fraction of one.",
    {
      code: WASM_FALLBACK_WARNING,
      detail:
        "The package's postinstall builds it with a C++ compiler (g++, or GROTH16_PROVER_CXX) on x86-64; it did not run (npm install --ignore-scripts, an npm whose allowScripts does not list the package) or found no compiler. Build it now: node node_modules/x402-privacy-sdk/native-prover/build.mjs. Silence this by passing native: \"wasm\" to LocalProver.",
    },
  );
}

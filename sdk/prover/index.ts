export { WasmProver, type TimedProof, type WasmProverOptions } from "./wasm-prover.js";
export {
  LocalProver,
  sharedProver,
  checkedNativeProof,
  UnverifiedProofError,
  type EngineName,
  type EngineProof,
  type LocalProverOptions,
  type NativeEngine,
  type ProofEngine,
} from "./local-prover.js";
export { WASM_FALLBACK_WARNING } from "./wasm-fallback-notice.js";
export { NativeProverProcess, builtNativeProver, type NativeProverInfo, type NativeProofTimings } from "./native-process.js";
export { NoWitnessError, WitnessCalculator, witnessValues } from "./witness.js";
export { FIELD_ELEMENT_BYTES } from "./proving-key.js";

export { sharedProver, WasmProver, type TimedProof, type WasmProverOptions } from "./wasm-prover.js";
export { NoWitnessError, WitnessCalculator, witnessValues } from "./witness.js";
export { FIELD_ELEMENT_BYTES } from "./proving-key.js";

// The part of circom_runtime (the witness calculator snarkjs runs) this project uses; it ships no declarations.
declare module "circom_runtime" {
  export interface WitnessCalculator {
    /** The witness as a .wtns file; rejects when the input violates a constraint. */
    calculateWTNSBin(input: Record<string, unknown>, sanityCheck?: boolean): Promise<Uint8Array>;
  }
  export function WitnessCalculatorBuilder(wasm: Uint8Array, options?: Record<string, unknown>): Promise<WitnessCalculator>;
}

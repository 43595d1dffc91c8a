// The part of circom_runtime (the witness calculator snarkjs runs) this project uses; it ships no declarations.
declare module "circom_runtime" {
  export interface WitnessCalculator {
    /** The witness as a .wtns file; rejects when the input violates a constraint. */
    calculateWTNSBin(input: Record<string, unknown>, sanityCheck?: boolean): Promise<Uint8Array>;
    /** Every signal's value, in the witness's order: 1, the main component's outputs, its inputs, the rest. */
    calculateWitness(input: Record<string, unknown>, sanityCheck?: boolean): Promise<bigint[]>;
  }
  export function WitnessCalculatorBuilder(wasm: Uint8Array, options?: Record<string, unknown>): Promise<WitnessCalculator>;
}

import { readFile } from "node:fs/promises";
import { WitnessCalculatorBuilder, type WitnessCalculator as CircomCalculator } from "circom_runtime";
import type { WithdrawCircuitInput } from "../circuit/withdraw-input.js";
import { readSections, section } from "./bin-file.js";

/** Section of a .wtns file that holds the signal values. */
const WTNS_VALUES_SECTION = 2;

/** The circuit admits no witness for the input. Carries no detail: the calculator's message can name private values. */
export class NoWitnessError extends Error {
  constructor() {
    super("the input admits no witness");
    this.name = "NoWitnessError";
  }
}

/** Computes witnesses with the circuit's wasm compiled and instantiated once, not once per proof. */
export class WitnessCalculator {
  private constructor(
    private readonly wasm: Uint8Array,
    private calculator: CircomCalculator,
  ) {}

  static async load(wasmPath: string): Promise<WitnessCalculator> {
    const wasm = await readFile(wasmPath);
    return new WitnessCalculator(wasm, await WitnessCalculatorBuilder(wasm));
  }

  /** The witness as a .wtns file (what a native prover reads). Throws NoWitnessError when the circuit rejects the input. */
  async calculate(input: WithdrawCircuitInput): Promise<Uint8Array> {
    try {
      return await this.calculator.calculateWTNSBin(input);
    } catch {
      // The failure is thrown from inside the wasm, mid-computation: the next witness starts from a fresh instance.
      this.calculator = await WitnessCalculatorBuilder(this.wasm);
      throw new NoWitnessError();
    }
  }
}

/** The signal values of a .wtns file: 32-byte little-endian field elements, the constant 1 first. */
export function witnessValues(wtns: Uint8Array): Uint8Array {
  return section(readSections(wtns, "wtns"), WTNS_VALUES_SECTION);
}

import * as snarkjs from "snarkjs";
import { WITHDRAW_ARTIFACTS, type WithdrawCircuitInput } from "../../sdk/index.js";

/**
 * Resolves when the circuit admits a witness for `input`, rejects with the failed constraint otherwise.
 * Cheaper than a full proof, and the failure is exactly what a dishonest prover hits.
 */
export async function calculateWitness(input: WithdrawCircuitInput): Promise<void> {
  await snarkjs.wtns.calculate(input, WITHDRAW_ARTIFACTS.wasm, { type: "mem" });
}

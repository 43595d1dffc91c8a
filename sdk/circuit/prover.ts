import { readFile } from "node:fs/promises";
import * as snarkjs from "snarkjs";
import { WITHDRAW_ARTIFACTS, type CircuitArtifacts } from "./artifacts.js";
import type { WithdrawProof } from "./proof.js";
import type { WithdrawCircuitInput } from "./withdraw-input.js";

export type { Groth16Proof, WithdrawProof } from "./proof.js";

/** A verification key as snarkjs exports it. */
export type VerificationKey = Record<string, unknown>;

/** Generates a Groth16 withdrawal proof. Throws when the input admits no witness (the circuit rejects it). */
export async function proveWithdrawal(
  input: WithdrawCircuitInput,
  artifacts: CircuitArtifacts = WITHDRAW_ARTIFACTS,
): Promise<WithdrawProof> {
  return snarkjs.groth16.fullProve(input, artifacts.wasm, artifacts.zkey);
}

export async function loadVerificationKey(path: string = WITHDRAW_ARTIFACTS.vkey): Promise<VerificationKey> {
  return JSON.parse(await readFile(path, "utf8")) as VerificationKey;
}

/** Checks a withdrawal proof against the verification key off chain. */
export async function verifyWithdrawal(
  { proof, publicSignals }: WithdrawProof,
  verificationKey: VerificationKey,
): Promise<boolean> {
  return snarkjs.groth16.verify(verificationKey, publicSignals, proof);
}

/**
 * snarkjs keeps the curve's worker threads alive for the next proof. A process that is done proving releases
 * them, or it never exits.
 */
export async function releaseProverThreads(): Promise<void> {
  const cached = globalThis as { curve_bn128?: { terminate(): Promise<void> } | null };
  await cached.curve_bn128?.terminate();
}

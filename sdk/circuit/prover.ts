import { readFile } from "node:fs/promises";
import * as snarkjs from "snarkjs";
import { WITHDRAW_ARTIFACTS, type CircuitArtifacts } from "./artifacts.js";
import type { WithdrawCircuitInput } from "./withdraw-input.js";

// The SDK's own names for what snarkjs reads and writes: its package's types must not need snarkjs' (it ships none;
// sdk/types/snarkjs.d.ts declares its API for these sources only, with this proof type).

/** A Groth16 proof as snarkjs writes it: affine coordinates as decimal strings. */
export interface Groth16Proof {
  pi_a: string[];
  pi_b: string[][];
  pi_c: string[];
  protocol: string;
  curve: string;
}

/** A verification key as snarkjs exports it. */
export type VerificationKey = Record<string, unknown>;

export interface WithdrawProof {
  proof: Groth16Proof;
  /** Positional public signals as decimal strings (see public-signals.ts for their names). */
  publicSignals: string[];
}

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

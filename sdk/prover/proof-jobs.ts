import type { CircuitArtifacts } from "../circuit/artifacts.js";
import type { Groth16Proof, WithdrawProof } from "../circuit/prover.js";
import type { WithdrawCircuitInput } from "../circuit/withdraw-input.js";
import type { WitnessMsm } from "./proving-engine.js";
import type { MsmSums } from "./proof-assembly.js";

/** What a proof worker is started with: the files it loads once, at start. */
export interface ProofWorkerData {
  artifacts: CircuitArtifacts;
}

/** What the pool learns from a worker once it has loaded the key: how to cut a proof into jobs. */
export interface ProofShape {
  nPublic: number;
  /** Windows of the quotient's multi-exponentiation, shared out as jobs. */
  quotientWindows: number;
}

/**
 * Work a proof worker does, one job at a time. A proof is a witness job, then the quotient and the witness
 * multi-exponentiations, then windows of the quotient's multi-exponentiation, then the assembly
 * (proof-schedule.ts).
 */
export type ProofJob =
  /** The witness, as a .wtns file. */
  | { kind: "witness"; input: WithdrawCircuitInput }
  /** The H scalars, from the witness values. */
  | { kind: "quotient"; witness: Uint8Array }
  /** One multi-exponentiation over the witness values. */
  | { kind: "witnessMsm"; msm: WitnessMsm; witness: Uint8Array }
  /** Windows first..last-1 of the multi-exponentiation over the H scalars. */
  | { kind: "quotientMsm"; h: Uint8Array; first: number; last: number }
  | { kind: "assemble"; sums: MsmSums }
  /** Checks a proof against the verification key. */
  | { kind: "verify"; proof: WithdrawProof };

export interface ProofJobResults {
  witness: { wtns: Uint8Array; witnessMs: number };
  quotient: { h: Uint8Array };
  witnessMsm: { sum: Uint8Array };
  quotientMsm: { sum: Uint8Array };
  assemble: { proof: Groth16Proof };
  verify: { valid: boolean };
}

export type ProofJobResult = ProofJobResults[ProofJob["kind"]];

/** Why a job failed: the input admits no witness, or anything else (its message carries no input). */
export type ProofJobFailure = { reason: "no_witness" } | { reason: "failed"; message: string };

/** Messages from a proof worker: ready with the proof's shape once loaded, then one answer per job it was posted. */
export type ProofWorkerMessage = { ready: ProofShape } | { ok: true; result: ProofJobResult } | { ok: false; failure: ProofJobFailure };

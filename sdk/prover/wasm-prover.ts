import { availableParallelism } from "node:os";
import { WITHDRAW_ARTIFACTS, type CircuitArtifacts } from "../circuit/artifacts.js";
import type { WithdrawProof } from "../circuit/prover.js";
import type { WithdrawCircuitInput } from "../circuit/withdraw-input.js";
import { proveWitness } from "./proof-schedule.js";
import { NoWitnessError } from "./witness.js";
import { ProofJobError, WorkerPool } from "./worker-pool.js";

export interface TimedProof extends WithdrawProof {
  /** Witness and proof, from the moment a worker took the proof up (queueing not counted). */
  proofTimeMs: number;
  /** The witness alone, part of proofTimeMs. */
  witnessTimeMs: number;
}

export interface WasmProverOptions {
  /** Worker threads one proof is spread over; default one per core. */
  workers?: number;
  artifacts?: CircuitArtifacts;
  /** Told when a worker died after it was ready (another is started in its place). */
  onWorkerLost?: (error: Error) => void;
}

/**
 * Groth16 withdrawal proofs on worker threads that hold the keys and the witness calculator for good, with
 * snarkjs' own wasm kernels (proving-engine.ts): about twice as fast as snarkjs' fullProve, and the same proof.
 * The project's portable proving engine: it makes every witness and checks every native proof, and proves itself
 * where no native prover runs, for an agent (local-prover.ts) and for the relayer (relayer/prover/prover-service.ts).
 */
export class WasmProver {
  private readonly pool: WorkerPool;
  /** Proofs ever started: the next one's place in line. */
  private started = 0;

  constructor(options: WasmProverOptions = {}) {
    this.pool = new WorkerPool(options.workers ?? availableParallelism(), { artifacts: options.artifacts ?? WITHDRAW_ARTIFACTS }, options.onWorkerLost ?? (() => undefined));
  }

  /**
   * A place in line: the jobs of a proof go before those of proofs that took a later place, so a proof's late
   * jobs are not held up by the next proof's early ones.
   */
  takePlace(): number {
    return this.started++;
  }

  /**
   * Proves a withdrawal: the witness, then the proof from it, by `fromWitness` when given (a native prover) or by
   * this engine. Throws NoWitnessError when the circuit rejects the input.
   */
  async prove(
    input: WithdrawCircuitInput,
    place = this.takePlace(),
    fromWitness: (wtns: Uint8Array) => Promise<WithdrawProof> = (wtns) => this.proveWitness(wtns, place),
  ): Promise<TimedProof> {
    const { wtns, witnessMs } = await this.pool.run({ kind: "witness", input }, place).catch((error: unknown) => {
      throw error instanceof ProofJobError && error.failure.reason === "no_witness" ? new NoWitnessError() : error;
    });
    const started = performance.now();
    const proof = await fromWitness(wtns);
    return { ...proof, proofTimeMs: Math.round(witnessMs + performance.now() - started), witnessTimeMs: Math.round(witnessMs) };
  }

  /** The proof of a witness (a .wtns file), spread over the workers. */
  proveWitness(wtns: Uint8Array, place: number): Promise<WithdrawProof> {
    return proveWitness(this.pool, wtns, place);
  }

  /** Whether `proof` verifies against the verification key; a proof that is not even made of points does not. */
  async verify(proof: WithdrawProof, place = this.takePlace()): Promise<boolean> {
    return (await this.pool.run({ kind: "verify", proof }, place)).valid;
  }

  /** Ends the worker threads; proofs not finished are rejected. Idle workers do not keep a process alive. */
  close(): Promise<void> {
    return this.pool.close();
  }
}

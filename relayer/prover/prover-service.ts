import type { Logger } from "pino";
import { availableParallelism } from "node:os";
import { WITHDRAW_ARTIFACTS, type CircuitArtifacts, type WithdrawCircuitInput, type WithdrawProof } from "../../sdk/index.js";
import { RELAYER_ERROR_STATUS, RelayerError } from "../errors.js";
import type { Prover, TimedProof } from "../settlement/prover.js";
import { NativeProver } from "./native-prover.js";
import { proveWitness } from "./proof-schedule.js";
import { ProofJobError, WorkerPool } from "./worker-pool.js";

export interface ProverServiceOptions {
  /** Proof worker threads; one proof is spread over all of them. Default: one per core. */
  workers?: number;
  /** Proofs that may wait behind the one being proven; one more is refused at once with PROVER_BUSY. */
  maxQueued: number;
  /** A rapidsnark-compatible binary to prove with once its first proof verifies. */
  nativeProverPath?: string;
  artifacts?: CircuitArtifacts;
}

/** What a proof took before any was measured (in process, 2 cores), to size the first Retry-After. */
const INITIAL_PROOF_MS = 2_000;
/** Weight of the newest proof in the running average behind Retry-After. */
const AVERAGE_WEIGHT = 0.2;

/**
 * Proves withdrawals on worker threads that hold the proving key, the verification key and the witness
 * calculator in memory. Back-pressure is an immediate PROVER_BUSY (503 with Retry-After), never a timeout.
 * With a native prover configured, its first proof is checked against the verification key; a binary that fails
 * that check, or fails at all, is refused for the life of the process and proofs are made in process.
 */
export class ProverService implements Prover {
  private readonly pool: WorkerPool;
  private readonly native?: NativeProver;
  private nativeTrusted = false;
  private nativeRefused = false;
  /** Proofs accepted and not finished, running or waiting. */
  private inFlight = 0;
  /** Proofs ever accepted: the next one's place in line. */
  private admitted = 0;
  private averageProofMs = INITIAL_PROOF_MS;

  constructor(
    private readonly options: ProverServiceOptions,
    private readonly logger: Logger,
  ) {
    const artifacts = options.artifacts ?? WITHDRAW_ARTIFACTS;
    this.pool = new WorkerPool(options.workers ?? availableParallelism(), { artifacts }, (error) =>
      logger.error({ err: error.message }, "a proof worker died; started another"),
    );
    if (options.nativeProverPath) this.native = new NativeProver(options.nativeProverPath, artifacts.zkey);
  }

  async prove(input: WithdrawCircuitInput): Promise<TimedProof> {
    // One proof at a time has the workers (later ones only fill their idle moments); the rest wait in line.
    if (this.inFlight >= 1 + this.options.maxQueued) {
      throw new RelayerError(
        "PROVER_BUSY",
        "The prover is busy with other proofs; nothing was spent. Retry after the Retry-After seconds.",
        {},
        RELAYER_ERROR_STATUS.PROVER_BUSY,
        this.retryAfterSeconds(),
      );
    }
    this.inFlight++;
    const priority = this.admitted++;
    try {
      const { wtns, witnessMs } = await this.pool.run({ kind: "witness", input }, priority);
      const started = performance.now();
      const proof =
        this.native && !this.nativeRefused ? await this.proveNatively(this.native, wtns, priority) : await proveWitness(this.pool, wtns, priority);
      const proofTimeMs = Math.round(witnessMs + performance.now() - started);
      this.averageProofMs += AVERAGE_WEIGHT * (proofTimeMs - this.averageProofMs);
      return { ...proof, proofTimeMs, witnessTimeMs: Math.round(witnessMs) };
    } catch (error) {
      if (error instanceof ProofJobError && error.failure.reason === "no_witness") {
        // Said without the calculator's message, which could echo private inputs.
        throw new RelayerError("INVALID_PROOF", "The note cannot be proven against the current trees. Refresh the ASP and state roots and retry.");
      }
      throw error;
    } finally {
      this.inFlight--;
    }
  }

  /** Ends the worker threads; proofs not finished are rejected. */
  async close(): Promise<void> {
    await this.pool.close();
  }

  private async proveNatively(native: NativeProver, wtns: Uint8Array, priority: number): Promise<WithdrawProof> {
    try {
      const proof = await native.prove(wtns);
      if (!this.nativeTrusted) {
        if (!(await this.pool.run({ kind: "verify", proof }, priority)).valid) throw new Error("its first proof does not verify");
        this.nativeTrusted = true;
        this.logger.info({ binary: native.binary }, "native prover checked; proving with it");
      }
      return proof;
    } catch (error) {
      if (!this.nativeRefused) {
        this.nativeRefused = true;
        const reason = error instanceof Error ? error.message : String(error);
        this.logger.warn({ binary: native.binary, reason }, "native prover refused; proving in process");
      }
      return proveWitness(this.pool, wtns, priority);
    }
  }

  /** When a retry can expect room: the proofs ahead of it, one after the other, at the recent proof time. */
  private retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((this.inFlight * this.averageProofMs) / 1000));
  }
}

import type { Logger } from "pino";
import { WITHDRAW_ARTIFACTS, type CircuitArtifacts, type WithdrawCircuitInput, type WithdrawProof } from "../../sdk/index.js";
import { NoWitnessError, UnverifiedProofError, WasmProver, checkedNativeProof, type NativeEngine, type TimedProof } from "../../sdk/prover/index.js";
import { RELAYER_ERROR_STATUS, RelayerError } from "../errors.js";
import type { Prover } from "../settlement/prover.js";
import { NativeProverProcess, builtNativeProver } from "../../sdk/prover/native-process.js";
import { NativeProver } from "./native-prover.js";

export interface ProverServiceOptions {
  /** Proof worker threads; one proof is spread over all of them. Default: one per core. */
  workers?: number;
  /** Proofs that may wait behind the one being proven; one more is refused at once with PROVER_BUSY. */
  maxQueued: number;
  /**
   * Which prover makes proofs: "native" this project's native prover (built by `npm ci` into sdk/build/native-prover;
   * refused at start when it is missing), "wasm" the in-process engine, "auto" (default) native when built.
   */
  prover?: ProverChoice;
  /** A rapidsnark-compatible binary, called once per proof, instead of the built native prover. */
  nativeProverPath?: string;
  /** The native prover binary to run in serve mode (default: the one `npm ci` built). */
  nativeServerPath?: string;
  artifacts?: CircuitArtifacts;
}

export type ProverChoice = "auto" | "native" | "wasm";

/** What a proof took before any was measured (in process, 2 cores), to size the first Retry-After. */
const INITIAL_PROOF_MS = 2_000;
/** Weight of the newest proof in the running average behind Retry-After. */
const AVERAGE_WEIGHT = 0.2;

/**
 * Proves withdrawals: witnesses on the worker threads of the shared wasm engine (sdk/prover), which hold the
 * witness calculator and the verification key, the proof itself natively (native-prover/, a long-lived child
 * process holding the proving key) or, without one, on the wasm engine. Back-pressure is an immediate PROVER_BUSY (503 with Retry-After), never a timeout.
 * Every native proof is checked against the verification key before it leaves; one that fails the check (or a
 * native prover that fails) is logged and that proof is made by the wasm engine, and checked too.
 */
export class ProverService implements Prover {
  private readonly wasm: WasmProver;
  private readonly native?: NativeEngine;
  /** Proofs accepted and not finished, running or waiting. */
  private inFlight = 0;
  private averageProofMs = INITIAL_PROOF_MS;
  /** The native prover process started or failed to (the wasm engine proves then), or there is none to wait for. */
  private nativeSettled: boolean;

  constructor(
    private readonly options: ProverServiceOptions,
    private readonly logger: Logger,
  ) {
    const artifacts = options.artifacts ?? WITHDRAW_ARTIFACTS;
    this.native = startNative(options, artifacts);
    this.nativeSettled = !(this.native instanceof NativeProverProcess);
    this.wasm = new WasmProver({
      workers: options.workers,
      artifacts,
      onWorkerLost: (error) => logger.error({ err: error.message }, "a proof worker died; started another"),
    });
    if (this.native instanceof NativeProverProcess) {
      const native = this.native;
      native.ready.then(
        (info) => {
          this.nativeSettled = true;
          logger.info({ prover: "native", binary: native.binary, ...info }, "prover: native (checked against the verification key per proof)");
        },
        (error: Error) => {
          this.nativeSettled = true;
          logger.warn({ prover: "wasm", reason: error.message }, "prover: the native prover did not start; proving with the wasm engine");
        },
      );
    } else if (this.native) {
      logger.info({ prover: "native", binary: this.native.binary }, "prover: rapidsnark-compatible binary (checked against the verification key per proof)");
    } else {
      logger.info({ prover: "wasm" }, "prover: wasm engine");
    }
  }

  /** The prover proofs are made with now: "native" or "wasm" (the fallback when the native one is gone). */
  get engine(): "native" | "wasm" {
    return this.native && !(this.native instanceof NativeProverProcess && this.native.dead) ? "native" : "wasm";
  }

  /** Proofs can be made now: the native prover started, or failed and the wasm engine proves instead. */
  get ready(): boolean {
    return this.nativeSettled;
  }

  /** Resolves once `ready`: the relayer takes requests from then on. */
  async whenReady(): Promise<void> {
    if (this.native instanceof NativeProverProcess) await this.native.ready.catch(() => undefined);
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
    const place = this.wasm.takePlace();
    try {
      const native = this.engine === "native" ? this.native! : undefined;
      const proof = await this.wasm.prove(input, place, native && ((wtns) => this.proveNatively(native, wtns, place)));
      this.averageProofMs += AVERAGE_WEIGHT * (proof.proofTimeMs - this.averageProofMs);
      return proof;
    } catch (error) {
      if (error instanceof NoWitnessError) {
        // Said without the calculator's message, which could echo private inputs.
        throw new RelayerError("INVALID_PROOF", "The note cannot be proven against the current trees. Refresh the ASP and state roots and retry.");
      }
      throw error;
    } finally {
      this.inFlight--;
    }
  }

  /** Checks an agent's proof on a worker thread, in line with the proofs being made. */
  verify(proof: WithdrawProof): Promise<boolean> {
    return this.wasm.verify(proof);
  }

  /** Ends the worker threads and the native prover; proofs not finished are rejected. */
  async close(): Promise<void> {
    await Promise.all([this.wasm.close(), this.native?.close?.()]);
  }

  /** A native proof, verified, or the wasm engine's (verified too) when the native one fails (checkedNativeProof). */
  private async proveNatively(native: NativeEngine, wtns: Uint8Array, place: number): Promise<WithdrawProof> {
    const onRefused = (reason: string) => this.logger.warn({ binary: native.binary, reason }, "native proof refused; proving this one with the wasm engine");
    try {
      const { proof, publicSignals } = await checkedNativeProof(this.wasm, native, wtns, place, onRefused);
      return { proof, publicSignals };
    } catch (error) {
      if (!(error instanceof UnverifiedProofError)) throw error;
      throw new RelayerError("INTERNAL", "The prover made no valid proof for this witness; nothing was relayed or spent. Retry the request.");
    }
  }

  /** When a retry can expect room: the proofs ahead of it, one after the other, at the recent proof time. */
  private retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((this.inFlight * this.averageProofMs) / 1000));
  }
}

/** The native prover the options ask for, if any. */
function startNative(options: ProverServiceOptions, artifacts: CircuitArtifacts): NativeEngine | undefined {
  const choice = options.prover ?? "auto";
  if (choice === "wasm") return undefined;
  if (options.nativeProverPath) return new NativeProver(options.nativeProverPath, artifacts.zkey);
  const server = options.nativeServerPath ?? builtNativeProver();
  if (server) return new NativeProverProcess(server, artifacts.zkey);
  if (choice === "native") {
    throw new Error("RELAYER_PROVER=native but no native prover is built: run `node sdk/native-prover/build.mjs` (needs g++), or use auto or wasm");
  }
  return undefined;
}

import { WITHDRAW_ARTIFACTS, type CircuitArtifacts } from "../circuit/artifacts.js";
import type { WithdrawProof } from "../circuit/prover.js";
import type { WithdrawCircuitInput } from "../circuit/withdraw-input.js";
import { NativeProverProcess, builtNativeProver } from "./native-process.js";
import { tellWasmFallbackOnce } from "./wasm-fallback-notice.js";
import { WasmProver, type TimedProof } from "./wasm-prover.js";

/** Which engine made a proof: this project's native prover (native-prover/) or the wasm engine. */
export type EngineName = "native" | "wasm";

/** A proof and the engine that made it. */
export interface EngineProof extends TimedProof {
  engine: EngineName;
}

/** What proves an agent's withdrawals; LocalProver is the SDK's. */
export interface ProofEngine {
  prove(input: WithdrawCircuitInput): Promise<EngineProof>;
}

/** A native prover whose proofs are checked before use: the built one kept alive, or a one-shot binary. */
export interface NativeEngine {
  readonly binary: string;
  prove(wtns: Uint8Array): Promise<WithdrawProof>;
  close?(): Promise<void>;
}

/** The wasm engine made a proof of a witness that does not verify: nothing can be relayed from it. */
export class UnverifiedProofError extends Error {
  constructor() {
    super("neither prover made a proof of this witness that verifies against the verification key");
  }
}

/**
 * The proof of `wtns` by `native`, checked against the verification key on the wasm engine's workers; a proof that
 * fails the check (or a native prover that fails) is proven again by the wasm engine, whose proof is checked too.
 * A proof that does not verify is never returned (UnverifiedProofError).
 */
export async function checkedNativeProof(
  wasm: WasmProver,
  native: NativeEngine,
  wtns: Uint8Array,
  place: number,
  onRefused: (reason: string) => void,
): Promise<WithdrawProof & { engine: EngineName }> {
  let reason: string;
  try {
    const { proof, publicSignals } = await native.prove(wtns);
    if (await wasm.verify({ proof, publicSignals }, place)) return { proof, publicSignals, engine: "native" };
    reason = "its proof does not verify against the verification key";
  } catch (error) {
    reason = error instanceof Error ? error.message : String(error);
  }
  onRefused(reason);
  const proof = await wasm.proveWitness(wtns, place);
  if (!(await wasm.verify(proof, place))) throw new UnverifiedProofError();
  return { ...proof, engine: "wasm" };
}

export interface LocalProverOptions {
  /** Wasm worker threads (witnesses, checks, and proofs without a native prover); default one per core. */
  workers?: number;
  artifacts?: CircuitArtifacts;
  /**
   * "auto" (default): the native prover `npm ci` built, when it was built, else the wasm engine; "wasm": never
   * native; or the path of a native prover binary to run in serve mode.
   */
  native?: "auto" | "wasm" | string;
  /** Told why a native proof was not used (that proof was made by the wasm engine). */
  onNativeRefused?: (reason: string) => void;
}

/**
 * An agent's proving engine in Node: witnesses on the wasm engine's workers, proofs by the project's native prover
 * (a child process started on the first proof, kept alive and out of the way of Node's exit) when it is built, by
 * the wasm engine otherwise (no compiler at install, or a native prover that failed or died). Each native proof is
 * checked against the verification key before it is returned. `engine` says which made each proof.
 */
export class LocalProver implements ProofEngine {
  readonly wasm: WasmProver;
  private readonly nativeBinary?: string;
  /** "auto" looked for the built native prover and found none: the first proof says so (tellWasmFallbackOnce). */
  private readonly nativeMissing: boolean;
  private native?: NativeProverProcess;

  constructor(private readonly options: LocalProverOptions = {}) {
    this.wasm = new WasmProver({ workers: options.workers, artifacts: options.artifacts });
    const choice = options.native ?? "auto";
    this.nativeBinary = choice === "wasm" ? undefined : choice === "auto" ? builtNativeProver() : choice;
    this.nativeMissing = choice === "auto" && this.nativeBinary === undefined;
  }

  /** The engine the next proof is meant for: "native" while a native prover is there and alive, else "wasm". */
  get engine(): EngineName {
    return this.nativeBinary !== undefined && !this.native?.dead ? "native" : "wasm";
  }

  async prove(input: WithdrawCircuitInput): Promise<EngineProof> {
    const native = this.nativeProcess();
    if (native === undefined) {
      if (this.nativeMissing) tellWasmFallbackOnce();
      return { ...(await this.wasm.prove(input)), engine: "wasm" };
    }
    let engine: EngineName = "native";
    const place = this.wasm.takePlace();
    const proof = await this.wasm.prove(input, place, async (wtns) => {
      const checked = await checkedNativeProof(this.wasm, native, wtns, place, (reason) => this.options.onNativeRefused?.(reason));
      engine = checked.engine;
      return { proof: checked.proof, publicSignals: checked.publicSignals };
    });
    return { ...proof, engine };
  }

  /** Ends the worker threads and the native prover. */
  async close(): Promise<void> {
    await Promise.all([this.wasm.close(), this.native?.close()]);
  }

  /** The native prover process, started on first use; undefined when there is none or it died. */
  private nativeProcess(): NativeProverProcess | undefined {
    if (this.nativeBinary === undefined) return undefined;
    this.native ??= new NativeProverProcess(this.nativeBinary, (this.options.artifacts ?? WITHDRAW_ARTIFACTS).zkey);
    return this.native.dead ? undefined : this.native;
  }
}

let shared: LocalProver | undefined;

/** The process's one engine for the agent's own proofs, started on first use (its workers load the keys in about 1.5 s). */
export function sharedProver(): LocalProver {
  shared ??= new LocalProver();
  return shared;
}

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import type { Groth16Proof, WithdrawProof } from "../circuit/prover.js";
import { SDK_ROOT } from "../sdk-root.js";

/**
 * Where the install (sdk/native-prover/build.mjs: the repository's `npm ci`, or the SDK package's own install)
 * leaves this project's native prover, when it could build it. The relayer proves with it, and so does an agent in
 * Node (local-prover.ts).
 */
export const BUILT_NATIVE_PROVER = path.join(SDK_ROOT, "build", "native-prover", "groth16-prover");

/**
 * Where a native prover keeps the key it prepares from a zkey (its arrays laid out for proving and H's shifted
 * bases, about 68 MB for the withdrawal key), so that a restart maps it instead of parsing the zkey and computing
 * the tables (1.3 s on two cores); each file is named and checked by a digest of its zkey
 * (native-prover/src/key-cache.hpp), so a new key makes a new file.
 */
export const NATIVE_TABLE_CACHE = path.join(SDK_ROOT, "build", "native-prover", "tables");

/** The built native prover, or undefined when the install could not build it. */
export function builtNativeProver(): string | undefined {
  return existsSync(BUILT_NATIVE_PROVER) ? BUILT_NATIVE_PROVER : undefined;
}

/** Whether `folder` is there or could be made (a read-only install proves without a table cache). */
function writableFolder(folder: string): boolean {
  try {
    mkdirSync(folder, { recursive: true });
    return true;
  } catch {
    return false;
  }
}

/** What the native prover says once its key is loaded. */
export interface NativeProverInfo {
  /** The kernels it chose for this CPU: "bmi2adx" or "portable". */
  cpu: string;
  threads: number;
  /** Milliseconds spent once at start on the key as every proof reuses it (H's shifted bases), computed or read back. */
  prepareMs: number;
  /** Whether it was read back (mapped) from the table cache. */
  tableCached: boolean;
  /** Milliseconds from the process' start to ready: the zkey's digest, then the key mapped, or parsed and prepared. */
  startMs: number;
}

/** Milliseconds the native prover spent in each part of one proof. */
export interface NativeProofTimings {
  quotientMs: number;
  msmMs: number;
}

interface Answer {
  ready?: true;
  cpu?: string;
  threads?: number;
  prepareMs?: number;
  tableCached?: boolean;
  startMs?: number;
  error?: string;
  proof?: Groth16Proof;
  publicSignals?: string[];
  timings?: NativeProofTimings;
}

interface Pending {
  resolve(answer: Answer): void;
  reject(error: Error): void;
}

/** The native prover processes of this process that have not ended yet. */
const running = new Set<NativeProverProcess>();

/**
 * Ends every native prover process this process started: a test runner's last step, since a child whose proof never
 * came back (its caller gave up) keeps Node's event loop alive.
 */
export async function closeNativeProvers(): Promise<void> {
  await Promise.all([...running].map((prover) => prover.close()));
}

/**
 * This project's native prover (native-prover/) as a long-lived child process that loads the zkey once: each
 * witness (a .wtns file) goes down its stdin length-prefixed, the proof comes back as one JSON line. It proves
 * one witness at a time, in the order they were sent. Its proofs are not trusted here: the caller verifies them.
 * While no proof is asked for, the process does not keep Node's event loop alive (an agent's script may end).
 */
export class NativeProverProcess {
  readonly ready: Promise<NativeProverInfo>;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending: Pending[] = [];
  private exited?: Error;
  /** Settles once the process is gone, whether it exited or never started. */
  private readonly gone: Promise<void>;
  private markGone!: () => void;
  private stderr = "";

  /**
   * @param tableCache The folder of prepared tables (default NATIVE_TABLE_CACHE), or false for none.
   * @param args The command line instead of `serve <zkey> <tableCache>`, for another prover that speaks the same
   *   protocol (the prover bench's rapidsnark peer).
   */
  constructor(
    readonly binary: string,
    zkeyPath: string,
    env: NodeJS.ProcessEnv = process.env,
    tableCache: string | false = NATIVE_TABLE_CACHE,
    args?: string[],
  ) {
    this.gone = new Promise((resolve) => (this.markGone = resolve));
    running.add(this);
    void this.gone.then(() => running.delete(this));
    const cacheArgs = tableCache !== false && writableFolder(tableCache) ? [tableCache] : [];
    this.child = spawn(binary, args ?? ["serve", zkeyPath, ...cacheArgs], { stdio: ["pipe", "pipe", "pipe"], env });
    const readyWaiter = new Promise<Answer>((resolve, reject) => this.pending.push({ resolve, reject }));
    this.ready = readyWaiter.then((answer) => {
      if (!answer.ready) throw new Error(`the native prover did not start: ${answer.error ?? "no ready line"}`);
      return {
        cpu: answer.cpu ?? "unknown",
        threads: answer.threads ?? 1,
        prepareMs: answer.prepareMs ?? 0,
        tableCached: answer.tableCached ?? false,
        startMs: answer.startMs ?? 0,
      };
    });
    this.ready.catch(() => {}); // reported to whoever awaits it
    this.child.stderr.on("data", (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-2_000)));
    createInterface({ input: this.child.stdout }).on("line", (line) => this.answer(line));
    this.child.on("error", (error) => this.fail(error));
    this.child.on("exit", (code, signal) => this.fail(new Error(`the native prover exited (${signal ?? `code ${code}`}): ${this.stderr.trim()}`)));
    this.child.stdin.on("error", (error) => this.fail(error));
    this.holdEventLoop(true); // until the ready line, which the first prove awaits
  }

  /** Whether the process is gone (crashed, killed or closed). */
  get dead(): boolean {
    return this.exited !== undefined;
  }

  /** Proves the witness `wtns`. Rejects when the prover refuses it (the reason says why) or is gone. */
  async prove(wtns: Uint8Array): Promise<WithdrawProof & { timings: NativeProofTimings }> {
    await this.ready;
    if (this.exited) throw this.exited;
    const answer = new Promise<Answer>((resolve, reject) => this.pending.push({ resolve, reject }));
    this.holdEventLoop(true);
    const length = Buffer.alloc(4);
    length.writeUInt32LE(wtns.byteLength);
    this.child.stdin.write(length);
    this.child.stdin.write(wtns);
    const { proof, publicSignals, timings, error } = await answer;
    if (error !== undefined || !proof || !publicSignals || !timings) throw new Error(`the native prover refused the witness: ${error ?? "no proof"}`);
    return { proof, publicSignals, timings };
  }

  /** Ends the process; proofs not answered are rejected. */
  async close(): Promise<void> {
    this.holdEventLoop(true);
    if (!this.exited) this.child.stdin.end(Buffer.alloc(4)); // length 0: stop
    await this.gone;
  }

  private answer(line: string): void {
    const waiter = this.pending.shift();
    if (!waiter) return;
    if (this.pending.length === 0) this.holdEventLoop(false);
    try {
      waiter.resolve(JSON.parse(line) as Answer);
    } catch {
      waiter.reject(new Error("the native prover answered something that is not JSON"));
    }
  }

  /** A child and its pipes keep Node running; only while an answer is awaited should they. */
  private holdEventLoop(hold: boolean): void {
    for (const handle of [this.child, this.child.stdin, this.child.stdout, this.child.stderr] as { ref?(): void; unref?(): void }[]) {
      if (hold) handle.ref?.();
      else handle.unref?.();
    }
  }

  private fail(error: Error): void {
    this.exited ??= error;
    this.markGone();
    for (const waiter of this.pending.splice(0)) waiter.reject(this.exited);
  }
}

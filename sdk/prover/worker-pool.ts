import { Worker } from "node:worker_threads";
import type { ProofJob, ProofJobFailure, ProofJobResult, ProofJobResults, ProofShape, ProofWorkerData, ProofWorkerMessage } from "./proof-jobs.js";

/**
 * In the repository these sources run as TypeScript, and so do the workers, through tsx as the services and the tests
 * (a loader registered at run time is not inherited); the SDK's package runs its compiled JavaScript, tsx-free.
 */
const FROM_SOURCES = import.meta.url.endsWith(".ts");
const WORKER_ENTRY = new URL(FROM_SOURCES ? "./proof-worker.ts" : "./proof-worker.js", import.meta.url);
const WORKER_EXEC_ARGV = FROM_SOURCES ? ["--import", import.meta.resolve("tsx")] : [];

/** A job the worker answered with a failure. */
export class ProofJobError extends Error {
  constructor(readonly failure: ProofJobFailure) {
    super(failure.reason === "no_witness" ? "the input admits no witness" : failure.message);
    this.name = "ProofJobError";
  }
}

interface Waiter {
  resolve(result: ProofJobResult): void;
  reject(error: Error): void;
}

interface QueuedJob extends Waiter {
  job: ProofJob;
  priority: number;
}

interface PooledWorker {
  worker: Worker;
  ready: boolean;
  /** The one job the worker is running. */
  current?: Waiter;
}

/**
 * Proof worker threads, each holding the keys and running one job at a time. Jobs wait for a free worker by
 * priority, then in order: a proof's later jobs go before the jobs of proofs admitted after it. A worker that
 * dies is replaced; one that dies before it is ready fails every job, since the next would fail the same way.
 */
export class WorkerPool {
  /** How a proof is cut into jobs, known once the first worker has loaded the key. */
  readonly shape: Promise<ProofShape>;
  private readonly workers: PooledWorker[] = [];
  private readonly queue: QueuedJob[] = [];
  private settleShape!: { resolve(shape: ProofShape): void; reject(error: Error): void };
  private startupError?: Error;
  private closed = false;

  constructor(
    readonly size: number,
    private readonly data: ProofWorkerData,
    private readonly onWorkerLost: (error: Error) => void,
  ) {
    this.shape = new Promise((resolve, reject) => (this.settleShape = { resolve, reject }));
    this.shape.catch(() => {}); // a startup failure is reported to every job
    for (let i = 0; i < size; i++) this.spawn();
  }

  /** Runs `job` on the first free worker; lower `priority` first. */
  run<J extends ProofJob>(job: J, priority: number): Promise<ProofJobResults[J["kind"]]> {
    const refusal = this.closed ? new Error("the prover is closed") : this.startupError;
    if (refusal) return Promise.reject(refusal);
    return new Promise((resolve, reject) => {
      const queued: QueuedJob = { job, priority, resolve: resolve as Waiter["resolve"], reject };
      const after = this.queue.findIndex((waiting) => waiting.priority > priority);
      this.queue.splice(after < 0 ? this.queue.length : after, 0, queued);
      this.dispatch();
    });
  }

  /** Ends every worker; jobs not finished are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    this.fail(new Error("the prover is closed"));
    await Promise.all(this.workers.map(({ worker }) => worker.terminate()));
  }

  private spawn(): void {
    // A worker prints nothing (quiet-worker.ts); its stdio is still not forwarded, so that nothing it might print
    // (the witness calculator's failed constraint names its values) reaches the service's output.
    const worker = new Worker(WORKER_ENTRY, { workerData: this.data, execArgv: WORKER_EXEC_ARGV, stdout: true, stderr: true });
    const pooled: PooledWorker = { worker, ready: false };
    this.workers.push(pooled);

    worker.on("message", (message: ProofWorkerMessage) => {
      if ("ready" in message) {
        pooled.ready = true;
        this.settleShape.resolve(message.ready);
      } else {
        const waiter = pooled.current!;
        pooled.current = undefined;
        if (message.ok) waiter.resolve(message.result);
        else waiter.reject(new ProofJobError(message.failure));
      }
      this.dispatch();
    });
    const lost = (error: Error) => {
      const index = this.workers.indexOf(pooled);
      if (index < 0) return; // "error" is followed by "exit"
      this.workers.splice(index, 1);
      pooled.current?.reject(error);
      if (this.closed) return;
      if (!pooled.ready) {
        this.startupError = new Error(`the proof worker failed to start: ${error.message}`);
        this.fail(this.startupError);
        return;
      }
      this.onWorkerLost(error);
      this.spawn();
    };
    worker.on("error", lost);
    worker.on("exit", (code) => lost(new Error(`the proof worker exited with code ${code}`)));
    this.dispatch();
  }

  private fail(error: Error): void {
    this.settleShape.reject(error);
    for (const queued of this.queue.splice(0)) queued.reject(error);
  }

  /**
   * Hands queued jobs to free workers. Workers keep the process alive only while there is work: a relayer that
   * failed to start, or an agent or script done proving, exits without closing the prover.
   */
  private dispatch(): void {
    for (const pooled of this.workers) {
      if (this.queue.length === 0) break;
      if (!pooled.ready || pooled.current) continue;
      const { job, resolve, reject } = this.queue.shift()!;
      pooled.current = { resolve, reject };
      pooled.worker.postMessage(job);
    }
    const busy = this.queue.length > 0 || this.workers.some((pooled) => pooled.current);
    for (const { worker } of this.workers) {
      if (busy) worker.ref();
      else worker.unref();
    }
  }
}

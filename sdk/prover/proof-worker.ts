// Entry point of a proof worker thread (worker-pool.ts): loads the keys and the witness calculator once, then
// answers the ProofJobs it is posted, one at a time.
import "./quiet-worker.js";
import { readFile } from "node:fs/promises";
import { parentPort, workerData } from "node:worker_threads";
import * as snarkjs from "snarkjs";
import { loadVerificationKey } from "../circuit/prover.js";
import { cosetStep, loadBn128 } from "./curve.js";
import { ProvingEngine } from "./proving-engine.js";
import { assembleProof } from "./proof-assembly.js";
import type { ProofJob, ProofJobFailure, ProofJobResult, ProofWorkerData, ProofWorkerMessage } from "./proof-jobs.js";
import { FIELD_ELEMENT_BYTES, readProvingKey } from "./proving-key.js";
import { NoWitnessError, WitnessCalculator } from "./witness.js";

const port = parentPort!;
const { artifacts } = workerData as ProofWorkerData;
const [curve, key, witnesses, verificationKey] = await Promise.all([
  loadBn128(),
  readFile(artifacts.zkey).then(readProvingKey),
  WitnessCalculator.load(artifacts.wasm),
  loadVerificationKey(artifacts.vkey),
]);
const engine = new ProvingEngine(curve.tm.code, key, cosetStep(curve.Fr, Math.log2(key.domainSize)));
// snarkjs' verify looks the bn128 engine up in this global; a worker thread can only have a single-threaded one.
(globalThis as { curve_bn128?: unknown }).curve_bn128 = curve;

async function run(job: ProofJob): Promise<ProofJobResult> {
  switch (job.kind) {
    case "witness": {
      const started = performance.now();
      const wtns = await witnesses.calculate(job.input);
      return { wtns, witnessMs: performance.now() - started };
    }
    case "quotient":
      return { h: engine.quotient(job.witness) };
    case "witnessMsm":
      // C has no terms for the constant and the public signals: the verifier adds those.
      return { sum: engine.sumWitness(job.msm, job.msm === "c" ? job.witness.subarray((key.nPublic + 1) * FIELD_ELEMENT_BYTES) : job.witness) };
    case "quotientMsm":
      return { sum: engine.sumWindows(job.h, job.first, job.last) };
    case "assemble":
      return { proof: assembleProof(curve, key, job.sums) };
    case "verify":
      try {
        return { valid: await snarkjs.groth16.verify(verificationKey, job.proof.publicSignals, job.proof.proof) };
      } catch {
        // A proof that is not even made of field elements and points is as invalid as a wrong one.
        return { valid: false };
      }
  }
}

const transferable = (result: ProofJobResult): ArrayBuffer[] =>
  "wtns" in result ? [result.wtns.buffer as ArrayBuffer] : "h" in result ? [result.h.buffer as ArrayBuffer] : [];

port.on("message", (job: ProofJob) => {
  run(job).then(
    (result) => port.postMessage({ ok: true, result } satisfies ProofWorkerMessage, transferable(result)),
    (error: unknown) => {
      const failure: ProofJobFailure =
        error instanceof NoWitnessError
          ? { reason: "no_witness" }
          : { reason: "failed", message: `${job.kind}: ${error instanceof Error ? error.message : String(error)}` };
      port.postMessage({ ok: false, failure } satisfies ProofWorkerMessage);
    },
  );
});
port.postMessage({ ready: { nPublic: key.nPublic, quotientWindows: engine.quotientWindows } } satisfies ProofWorkerMessage);

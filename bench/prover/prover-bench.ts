// npm run bench:prover
//
// Withdrawal proof latency, same inputs, one run: the relayer's prover service with the native prover
// (native-prover/, every proof verified before it is returned), the same service with its wasm engine, and plain
// snarkjs groth16.fullProve (which reloads the wasm and the zkey every proof). At each tree depth of
// BENCH_DEPTHS (default 2,10,20: both Merkle paths that many levels deep, every level with a real sibling),
// BENCH_PROOFS proofs per prover (default 12) after one warm-up, each proof a different note.
//
// Also measured, for the native prover: its own parts (the witness, computed by the circuit's wasm calculator
// on a worker thread; the quotient's FFTs; the multi-exponentiations, from the prover's timings), the
// verification of each proof against the verification key, and its two kernel builds (BMI2/ADX and portable)
// on the same witnesses, and what the long-lived process saves: the same binary called once per proof
// (rapidsnark's command line, reading the key each time), and `serve`'s start-up: from spawning it to its ready line,
// the first time (the key prepared and written to a fresh table cache), then BENCH_STARTS times (default 7) with the
// prepared key mapped back from that cache, as a restart finds it. BENCH_DEPTHS= (empty) measures the start-up alone.
//
// Side by side with rapidsnark (iden3's C++ prover), when its binaries are given (a benchmark peer, never a
// dependency; see the peer's README): RAPIDSNARK_PROVER, its one-shot CLI, and RAPIDSNARK_SERVE, it kept alive
// behind the same stdin/stdout protocol as `serve`; the same witnesses, one prover at a time. Prints a table and
// writes bench/results/prover.json.
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { pino } from "pino";
import { NativeProverProcess, builtNativeProver, type NativeProofTimings } from "../../sdk/prover/native-process.js";
import { ProverService } from "../../relayer/prover/prover-service.js";
import { WitnessCalculator } from "../../sdk/prover/witness.js";
import {
  WITHDRAW_ARTIFACTS,
  buildWithdrawInput,
  loadVerificationKey,
  proveWithdrawal,
  releaseProverThreads,
  verifyWithdrawal,
  type WithdrawCircuitInput,
} from "../../sdk/index.js";
import { atDepth } from "../../test/helpers/deep-path.js";
import { buildWithdrawScenario } from "../../test/helpers/withdraw-scenario.js";
import { percentile, printTable, writeResults } from "../report.js";

const PROOFS = Number(process.env.BENCH_PROOFS ?? 12);
const DEPTHS = (process.env.BENCH_DEPTHS ?? "2,10,20").split(",").filter(Boolean).map(Number);
const STARTS = Number(process.env.BENCH_STARTS ?? 7);

const binary = builtNativeProver();
if (!binary) throw new Error("no native prover built: run `node sdk/native-prover/build.mjs` first");
const RAPIDSNARK = { prover: process.env.RAPIDSNARK_PROVER, serve: process.env.RAPIDSNARK_SERVE };

/** PROOFS + 1 distinct inputs at `depth` (the first is the warm-up). */
function inputsAt(depth: number): WithdrawCircuitInput[] {
  return Array.from({ length: PROOFS + 1 }, (_, i) => {
    const { request } = buildWithdrawScenario({ withdrawnValue: 1_000_000n + BigInt(i), secrets: { nullifier: 100n + BigInt(i), secret: 7n * BigInt(i + 1) } });
    return buildWithdrawInput(atDepth(request, depth, BigInt(depth * 1000 + i)));
  });
}

/** Latencies of `prove` over the inputs, the first (warm-up) left out. */
async function latencies(inputs: WithdrawCircuitInput[], prove: (input: WithdrawCircuitInput) => Promise<unknown>): Promise<number[]> {
  const measured: number[] = [];
  for (const [i, input] of inputs.entries()) {
    const started = performance.now();
    await prove(input);
    if (i > 0) measured.push(performance.now() - started);
  }
  return measured;
}

/** The native prover process alone, on precomputed witnesses: its timings by kernel build. */
async function kernelTimings(wtns: Uint8Array[], cpu: "bmi2adx" | "portable") {
  const env = cpu === "portable" ? { ...process.env, GROTH16_PROVER_CPU: "portable" } : process.env;
  return keptAliveTimings(new NativeProverProcess(binary!, WITHDRAW_ARTIFACTS.zkey, env), wtns);
}

/** A kept-alive prover on precomputed witnesses, round trips measured here (the first left out); it is closed after. */
async function keptAliveTimings(prover: NativeProverProcess, wtns: Uint8Array[]) {
  const chosen = (await prover.ready).cpu;
  const timings: (NativeProofTimings & { totalMs: number })[] = [];
  for (const [i, witness] of wtns.entries()) {
    const started = performance.now();
    const { timings: parts } = await prover.prove(witness);
    if (i > 0) timings.push({ ...parts, totalMs: performance.now() - started });
  }
  await prover.close();
  return { cpu: chosen, timings };
}

/** Milliseconds from spawning a kept-alive prover to its ready line, and those it reports itself (startMs). */
async function readyMs(start: () => NativeProverProcess): Promise<{ ms: number; inProcessMs: number }> {
  const started = performance.now();
  const prover = start();
  const { startMs } = await prover.ready;
  const ms = performance.now() - started;
  await prover.close();
  return { ms, inProcessMs: startMs };
}

/** `command` run once per witness, as rapidsnark is: wall time of each call, the first left out. */
async function perCallMs(wtns: Uint8Array[], command = binary!): Promise<number[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "prover-bench-"));
  const measured: number[] = [];
  try {
    for (const [i, witness] of wtns.entries()) {
      const file = path.join(dir, "witness.wtns");
      await writeFile(file, witness);
      const started = performance.now();
      await promisify(execFile)(command, [WITHDRAW_ARTIFACTS.zkey, file, path.join(dir, "proof.json"), path.join(dir, "public.json")]);
      if (i > 0) measured.push(performance.now() - started);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return measured;
}

const p50 = (values: number[]) => Math.round(percentile(values, 50));
const p95 = (values: number[]) => Math.round(percentile(values, 95));
const verificationKey = await loadVerificationKey();
const calculator = await WitnessCalculator.load(WITHDRAW_ARTIFACTS.wasm);
const loadBefore = os.loadavg()[0]!;
const results: Record<string, unknown>[] = [];
const rows: [string, string][] = [];

// Start-up of `serve`, spawn to ready line: from a fresh table cache (the key parsed and prepared, then written) and
// from the filled one (mapped back), as a restart finds it; rapidsnark kept alive beside it.
const tableCache = mkdtempSync(path.join(os.tmpdir(), "prover-bench-tables-"));
const nativeServe = () => new NativeProverProcess(binary, WITHDRAW_ARTIFACTS.zkey, process.env, tableCache);
const computed = await readyMs(nativeServe);
const restarts: { ms: number; inProcessMs: number }[] = [];
for (let i = 0; i < STARTS; i++) restarts.push(await readyMs(nativeServe));
const startup = {
  computedMs: Math.round(computed.ms),
  cachedMs: p50(restarts.map((run) => run.ms)),
  cachedRunsMs: restarts.map((run) => Math.round(run.ms)),
  cachedInProcessMs: p50(restarts.map((run) => run.inProcessMs)),
  rapidsnarkMs: RAPIDSNARK.serve ? Math.round((await readyMs(() => rapidsnarkServe(RAPIDSNARK.serve!))).ms) : undefined,
};
await rm(tableCache, { recursive: true, force: true });
rows.push(
  [`START-UP of serve (spawn to ready), key mapped from the table cache: median of ${STARTS}`, `${startup.cachedMs} ms (${startup.cachedRunsMs.join(", ")})`],
  ["  of which in the prover (its startMs: zkey digest, key mapped and checked), median", `${startup.cachedInProcessMs} ms`],
  ["start-up of serve, first start (key parsed, H's tables computed, cache written)", `${startup.computedMs} ms`],
);
if (startup.rapidsnarkMs !== undefined) rows.push(["start-up of rapidsnark kept alive", `${startup.rapidsnarkMs} ms`]);

function rapidsnarkServe(serve: string): NativeProverProcess {
  return new NativeProverProcess(serve, WITHDRAW_ARTIFACTS.zkey, process.env, false, [WITHDRAW_ARTIFACTS.zkey]);
}

for (const depth of DEPTHS) {
  const inputs = inputsAt(depth);
  console.log(`depth ${depth}: ${PROOFS} proofs per prover after a warm-up...`);

  const native = new ProverService({ maxQueued: 0, prover: "native" }, pino({ level: "silent" }));
  const witnessMs: number[] = [];
  const verifyMs: number[] = [];
  const nativeMs = await latencies(inputs, async (input) => {
    const proof = await native.prove(input);
    witnessMs.push(proof.witnessTimeMs);
    const started = performance.now();
    if (!(await verifyWithdrawal(proof, verificationKey))) throw new Error("a native proof does not verify");
    verifyMs.push(performance.now() - started);
  });
  await native.close();

  const wasm = new ProverService({ maxQueued: 0, prover: "wasm" }, pino({ level: "silent" }));
  const wasmMs = await latencies(inputs, (input) => wasm.prove(input));
  await wasm.close();

  const plainMs = await latencies(inputs, (input) => proveWithdrawal(input));
  await releaseProverThreads();

  const wtns = await Promise.all(inputs.map((input) => calculator.calculate(input)));
  // One after the other: two provers at once would share the cores.
  const fast = await kernelTimings(wtns, "bmi2adx");
  const portable = await kernelTimings(wtns, "portable");
  const perCall = await perCallMs(wtns);
  const peer = {
    keptAliveP50Ms: RAPIDSNARK.serve ? p50((await keptAliveTimings(rapidsnarkServe(RAPIDSNARK.serve), wtns)).timings.map((t) => t.totalMs)) : undefined,
    perCallP50Ms: RAPIDSNARK.prover ? p50(await perCallMs(wtns, RAPIDSNARK.prover)) : undefined,
  };

  const result = {
    depth,
    native: { p50Ms: p50(nativeMs), p95Ms: p95(nativeMs) },
    wasm: { p50Ms: p50(wasmMs), p95Ms: p95(wasmMs) },
    plain: { p50Ms: p50(plainMs), p95Ms: p95(plainMs) },
    ratioPlainOverNative: Number((percentile(plainMs, 50) / percentile(nativeMs, 50)).toFixed(2)),
    ratioWasmOverNative: Number((percentile(wasmMs, 50) / percentile(nativeMs, 50)).toFixed(2)),
    nativeParts: {
      witnessP50Ms: p50(witnessMs.slice(1)),
      verifyP50Ms: p50(verifyMs.slice(1)),
      quotientP50Ms: p50(fast.timings.map((t) => t.quotientMs)),
      msmP50Ms: p50(fast.timings.map((t) => t.msmMs)),
    },
    perCallP50Ms: p50(perCall),
    keptAliveP50Ms: p50(fast.timings.map((t) => t.totalMs)),
    rapidsnark: peer,
    kernels: Object.fromEntries(
      [fast, portable].map(({ cpu, timings }) => [cpu, { proofP50Ms: p50(timings.map((t) => t.totalMs)), msmP50Ms: p50(timings.map((t) => t.msmMs)) }]),
    ),
  };
  results.push(result);
  rows.push(
    [`depth ${depth}: native p50 / p95`, `${result.native.p50Ms} / ${result.native.p95Ms} ms`],
    [`depth ${depth}: wasm engine p50 / p95`, `${result.wasm.p50Ms} / ${result.wasm.p95Ms} ms`],
    [`depth ${depth}: plain fullProve p50 / p95`, `${result.plain.p50Ms} / ${result.plain.p95Ms} ms`],
    [`depth ${depth}: ratio plain / native, wasm / native`, `${result.ratioPlainOverNative}x, ${result.ratioWasmOverNative}x`],
    [
      `depth ${depth}: native witness / FFTs / MSMs / verify p50`,
      `${result.nativeParts.witnessP50Ms} / ${result.nativeParts.quotientP50Ms} / ${result.nativeParts.msmP50Ms} / ${result.nativeParts.verifyP50Ms} ms`,
    ],
    [
      `depth ${depth}: kernels ${fast.cpu} / ${portable.cpu} (prove p50)`,
      `${p50(fast.timings.map((t) => t.totalMs))} / ${p50(portable.timings.map((t) => t.totalMs))} ms`,
    ],
    [`depth ${depth}: native long-lived / one call per proof (p50)`, `${result.keptAliveP50Ms} / ${result.perCallP50Ms} ms`],
  );
  if (peer.keptAliveP50Ms !== undefined || peer.perCallP50Ms !== undefined) {
    const shown = (ms: number | undefined) => (ms === undefined ? "-" : `${ms}`);
    rows.push([`depth ${depth}: rapidsnark long-lived / one call per proof (p50)`, `${shown(peer.keptAliveP50Ms)} / ${shown(peer.perCallP50Ms)} ms`]);
  }
}
const loadAfter = os.loadavg()[0]!;
rows.push(["cores; load average (1 min) before / after", `${os.cpus().length}; ${loadBefore.toFixed(2)} / ${loadAfter.toFixed(2)}`]);
printTable(["measurement", "result"], rows);
await writeResults("prover", { proofs: PROOFS, cores: os.cpus().length, loadAverage: { before: loadBefore, after: loadAfter }, startup, depths: results });
process.exit(0); // snarkjs' verifier leaves worker threads running

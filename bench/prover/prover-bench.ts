// npm run bench:prover
//
// Withdrawal proof latency of the relayer's prover service (relayer/prover) against plain snarkjs
// groth16.fullProve, which reloads the wasm and the zkey every proof: BENCH_PROOFS proofs each (default 20), one
// after the other, after one warm-up each, on the same valid input. The input is the tests' withdrawal scenario,
// or, with BENCH_TREE_LEAVES, one whose state and ASP trees hold that many other leaves each (the note in the
// middle): deeper paths leave the witness fewer repeated values, which the service adds once.
//
// Reports p50 and p95, the ratio plain/ours at p50, the service's witness time, and the memory of each phase: RSS
// of the whole process (worker threads included) at its start and at its peak, and the main thread's heap. The
// service runs first, in a fresh process, and is closed before plain snarkjs starts (whose RSS starts from what
// the service left). Prints a table and writes bench/results/prover.json.
import os from "node:os";
import { pino } from "pino";
import { ProverService } from "../../relayer/prover/prover-service.js";
import { buildWithdrawInput, proveWithdrawal, releaseProverThreads } from "../../sdk/index.js";
import { buildWithdrawScenario } from "../../test/helpers/withdraw-scenario.js";
import { percentile, printTable, writeResults } from "../report.js";

const PROOFS = Number(process.env.BENCH_PROOFS ?? 20);
const TREE_LEAVES = process.env.BENCH_TREE_LEAVES === undefined ? undefined : Number(process.env.BENCH_TREE_LEAVES);
const MEMORY_SAMPLE_MS = 25;
const MB = 1024 * 1024;

interface Phase {
  latenciesMs: number[];
  startRssMb: number;
  peakRssMb: number;
  peakHeapMb: number;
}

/** Runs `prove` once to warm up, then PROOFS times in a row, sampling memory throughout. */
async function measure(prove: () => Promise<unknown>): Promise<Phase> {
  const startRssMb = process.memoryUsage().rss / MB;
  const peak = { rss: 0, heap: 0 };
  const sample = () => {
    const { rss, heapUsed } = process.memoryUsage();
    peak.rss = Math.max(peak.rss, rss);
    peak.heap = Math.max(peak.heap, heapUsed);
  };
  const sampler = setInterval(sample, MEMORY_SAMPLE_MS);
  await prove();
  const latenciesMs: number[] = [];
  for (let i = 0; i < PROOFS; i++) {
    const started = performance.now();
    await prove();
    latenciesMs.push(performance.now() - started);
  }
  clearInterval(sampler);
  sample();
  return { latenciesMs, startRssMb, peakRssMb: peak.rss / MB, peakHeapMb: peak.heap / MB };
}

const deepTrees =
  TREE_LEAVES === undefined
    ? {}
    : { stateLeavesBefore: Math.floor(TREE_LEAVES / 2), stateLeavesAfter: Math.ceil(TREE_LEAVES / 2), otherAspLabels: TREE_LEAVES };
const input = buildWithdrawInput(buildWithdrawScenario(deepTrees).request);
const treeDepths = { state: Number(input.stateTreeDepth), asp: Number(input.aspTreeDepth) };
const loadBefore = os.loadavg()[0]!;

console.log(`prover service: ${PROOFS} withdrawal proofs after a warm-up...`);
const service = new ProverService({ maxQueued: 0 }, pino({ level: "silent" }));
const witnessMs: number[] = [];
const ours = await measure(async () => witnessMs.push((await service.prove(input)).witnessTimeMs));
await service.close();

console.log(`plain snarkjs groth16.fullProve: ${PROOFS} withdrawal proofs after a warm-up...`);
const plain = await measure(() => proveWithdrawal(input));
await releaseProverThreads();
const loadAfter = os.loadavg()[0]!;

const results = {
  oursP50Ms: Math.round(percentile(ours.latenciesMs, 50)),
  oursP95Ms: Math.round(percentile(ours.latenciesMs, 95)),
  plainP50Ms: Math.round(percentile(plain.latenciesMs, 50)),
  plainP95Ms: Math.round(percentile(plain.latenciesMs, 95)),
  ratio: Number((percentile(plain.latenciesMs, 50) / percentile(ours.latenciesMs, 50)).toFixed(2)),
  witnessP50Ms: Math.round(percentile(witnessMs.slice(1), 50)), // the first is the warm-up
  memory: Object.fromEntries(
    Object.entries({ ours, plain }).map(([name, phase]) => [
      name,
      { startRssMb: Math.round(phase.startRssMb), peakRssMb: Math.round(phase.peakRssMb), peakHeapMb: Math.round(phase.peakHeapMb) },
    ]),
  ) as Record<"ours" | "plain", { startRssMb: number; peakRssMb: number; peakHeapMb: number }>,
};

const rows: [string, string][] = [
  ["ours p50 / p95", `${results.oursP50Ms} / ${results.oursP95Ms} ms`],
  ["plain fullProve p50 / p95", `${results.plainP50Ms} / ${results.plainP95Ms} ms`],
  ["ratio plain / ours (p50)", `${results.ratio.toFixed(2)}x`],
  ["ours witness p50", `${results.witnessP50Ms} ms`],
  ["tree depths (state / ASP)", `${treeDepths.state} / ${treeDepths.asp}`],
  ...(["ours", "plain"] as const).map((name): [string, string] => {
    const { startRssMb, peakRssMb, peakHeapMb } = results.memory[name];
    return [`${name}: RSS at start -> peak, main-thread heap peak`, `${startRssMb} -> ${peakRssMb} MB, ${peakHeapMb} MB`];
  }),
  ["load average (1 min) before / after", `${loadBefore.toFixed(2)} / ${loadAfter.toFixed(2)}`],
];
printTable(["measurement", "result"], rows);
await writeResults("prover", { proofs: PROOFS, treeDepths, loadAverage: { before: loadBefore, after: loadAfter }, ...results });

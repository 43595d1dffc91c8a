// npm run bench:settle
//
// Server latency of POST /api/facilitator/settle and /settle-x402 on the local chain, each request a real proof and
// a real relay: BENCH_SETTLES sequential requests of each (default 10, after one warm-up), then BENCH_AGENTS agents
// (default 4) each making BENCH_AGENT_PAYMENTS settle-x402 payments (default 3) at once. Checks that every
// concurrent settle succeeded on chain with its own relayer nonce. BENCH_PROVER (auto, native or wasm; default
// auto: the native prover when `npm ci` built it) picks the relayer's prover. Prints a table and writes
// bench/results/settle.json.
import { Wallet } from "ethers";
import { noteToWire } from "../../sdk/client/facilitator-client.js";
import type { Note } from "../../sdk/index.js";
import { readPaymentRequired, selectExactRequirement } from "../../x402/payment-required.js";
import { deposit } from "../../test/indexer/helpers/pool-actions.js";
import { startPaymentWorld } from "../../test/x402/helpers/payment-world.js";
import { builtNativeProver } from "../../relayer/prover/native-process.js";
import { elapsedMs, percentile, printTable, writeResults } from "../report.js";

const SETTLES = Number(process.env.BENCH_SETTLES ?? 10);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 4);
const AGENT_PAYMENTS = Number(process.env.BENCH_AGENT_PAYMENTS ?? 3);

const PROVER = process.env.BENCH_PROVER ?? "auto";
const proverInUse = PROVER === "wasm" || (PROVER === "auto" && !builtNativeProver()) ? "wasm" : "native";

const world = await startPaymentWorld({ relayer: { prover: PROVER } });
// Closed on failure too: its servers and the chain would keep the process alive.
try {
  const required = await readPaymentRequired(await fetch(world.sellers.v2.resourceUrl));
  const accepted = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
  const resource = required!.x402Version === 2 ? required!.resource : undefined;

  console.log(`depositing ${2 * (SETTLES + 1) + AGENTS * AGENT_PAYMENTS} notes...`);
  let tag = 1_000;
  const depositors = Object.values(world.chain.depositors);
  const notes = async (count: number): Promise<Note[]> => {
    const made: Note[] = [];
    for (let i = 0; i < count; i++) made.push(await deposit(world.chain, depositors[tag % depositors.length]!, tag++, 1_000_000n));
    return made;
  };
  const settleNotes = await notes(SETTLES + 1);
  const x402Notes = await notes(SETTLES + 1);
  const agentNotes = await notes(AGENTS * AGENT_PAYMENTS);
  await world.syncIndexer();

  interface Timed {
    ms: number;
    status: number;
    body: Record<string, unknown>;
  }

  const timed = async (route: string, body: unknown): Promise<Timed> => {
    let answer!: { status: number; body: Record<string, unknown> };
    const ms = await elapsedMs(async () => {
      answer = await world.relayer.post(route, body);
    });
    if (answer.status !== 200) throw new Error(`${route} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return { ms, ...answer };
  };

  const settleBody = (note: Note) => ({
    paymentDetails: { payTo: Wallet.createRandom().address, maxAmountRequired: world.price.toString() },
    serviceDeposit: noteToWire(note),
  });
  const settleX402Body = (note: Note) => ({ accepts: accepted, resource, serviceDeposit: noteToWire(note), acceptNotPrivate: true });

  /** Runs the requests one after another, the first as a warm-up left out of the timings. */
  async function sequential(route: string, bodies: unknown[]): Promise<{ ms: number[]; proofMs: number[] }> {
    const answers: Timed[] = [];
    for (const body of bodies) answers.push(await timed(route, body));
    const measured = answers.slice(1);
    return { ms: measured.map(({ ms }) => ms), proofMs: measured.map(({ body }) => body.proofTimeMs as number) };
  }

  console.log(`${SETTLES} sequential settles...`);
  const settleMs = await sequential("/api/facilitator/settle", settleNotes.map(settleBody));
  console.log(`${SETTLES} sequential settle-x402...`);
  const x402Ms = await sequential("/api/facilitator/settle-x402", x402Notes.map(settleX402Body));

  console.log(`${AGENTS} agents, ${AGENT_PAYMENTS} settle-x402 each, at once...`);
  const concurrent: Timed[] = [];
  const concurrentWallMs = await elapsedMs(() =>
    Promise.all(
      Array.from({ length: AGENTS }, async (_, agent) => {
        for (let payment = 0; payment < AGENT_PAYMENTS; payment++) {
          concurrent.push(await timed("/api/facilitator/settle-x402", settleX402Body(agentNotes[agent * AGENT_PAYMENTS + payment]!)));
        }
      }),
    ),
  );
  const fundingTxs = await Promise.all(concurrent.map(({ body }) => world.provider.getTransaction(body.fundingTxHash as string)));
  const receipts = await Promise.all(concurrent.map(({ body }) => world.provider.getTransactionReceipt(body.fundingTxHash as string)));
  const nonces = new Set(fundingTxs.map((tx) => tx!.nonce));
  const failed = receipts.filter((receipt) => receipt?.status !== 1).length;
  if (nonces.size !== concurrent.length || failed > 0) {
    throw new Error(`concurrent settles: ${nonces.size} distinct nonces for ${concurrent.length} settles, ${failed} failed on chain`);
  }

  const summary = (timings: number[]) => ({
    count: timings.length,
    p50Ms: Math.round(percentile(timings, 50)),
    p95Ms: Math.round(percentile(timings, 95)),
  });
  const withProof = ({ ms, proofMs }: { ms: number[]; proofMs: number[] }) => ({ ...summary(ms), proofP50Ms: Math.round(percentile(proofMs, 50)) });
  const results = {
    prover: proverInUse,
    settle: withProof(settleMs),
    settleX402: withProof(x402Ms),
    concurrent: {
      agents: AGENTS,
      settles: concurrent.length,
      ...summary(concurrent.map(({ ms }) => ms)),
      errors: 0,
      distinctNonces: nonces.size,
      settlesPerMinute: Math.round((concurrent.length / concurrentWallMs) * 60_000),
    },
    sequentialSettlesPerMinute: Math.round(60_000 / (x402Ms.ms.reduce((sum, ms) => sum + ms, 0) / x402Ms.ms.length)),
  };

  printTable(
    ["measurement", "result"],
    [
      ["prover", proverInUse],
      [`settle, sequential (${results.settle.count})`, `p50 ${results.settle.p50Ms} ms, p95 ${results.settle.p95Ms} ms (proof p50 ${results.settle.proofP50Ms} ms)`],
      [`settle-x402, sequential (${results.settleX402.count})`, `p50 ${results.settleX402.p50Ms} ms, p95 ${results.settleX402.p95Ms} ms (proof p50 ${results.settleX402.proofP50Ms} ms)`],
      [`settle-x402, ${AGENTS} agents at once (${concurrent.length})`, `p50 ${results.concurrent.p50Ms} ms, p95 ${results.concurrent.p95Ms} ms`],
      ["  errors / distinct relayer nonces", `${results.concurrent.errors} / ${results.concurrent.distinctNonces} of ${concurrent.length}`],
      ["settles per minute, sequential / concurrent", `${results.sequentialSettlesPerMinute} / ${results.concurrent.settlesPerMinute}`],
    ],
  );
  await writeResults("settle", results);
} finally {
  await world.close();
}

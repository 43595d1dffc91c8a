// npm run bench:settle
//
// Latency of a settle and a settle-x402 on the local chain, each a real proof and a real relay, in both custodies:
// the relayer proves from the note (server proof: POST /api/facilitator/settle and /settle-x402, server time), and
// the agent proves (client proof + relay: quote, trees, the SDK's wasm prover, then /settle-proof or
// /settle-x402-proof; end to end as the agent sees it, and its parts). BENCH_SETTLES sequential payments of each
// (default 10, after one warm-up), then BENCH_AGENTS agents (default 4) each making BENCH_AGENT_PAYMENTS
// server-proof settle-x402 payments (default 3) at once: on the automining chain, then on blocks every
// BENCH_BLOCK_MS (default 2000, Base's block time) with the relayer's batching on and off, the latency and gas it
// trades. Checks that every concurrent settle's transaction spent its note on chain. BENCH_PROVER (auto, native or wasm; default auto: the native prover when `npm ci` built it)
// picks the relayer's prover; the agent proves with the SDK's LocalProver (the native prover when built, else the
// wasm engine) and keeps its trees from payment to payment, as an X402Agent does. Prints a table and writes
// bench/results/settle.json.
import { Wallet } from "ethers";
import { emptyTrees, proveLocally } from "../../sdk/agent/index.js";
import { FacilitatorClient, noteToWire } from "../../sdk/client/facilitator-client.js";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { sharedProver } from "../../sdk/prover/index.js";
import { grossForNet } from "../../relayer/pricing.js";
import { readPaymentRequired, selectExactRequirement } from "../../x402/payment-required.js";
import { deposit } from "../../test/indexer/helpers/pool-actions.js";
import { buildRelayerConfig, startRelayer, type RunningRelayer } from "../../test/relayer/helpers/relayer-harness.js";
import { startPaymentWorld } from "../../test/x402/helpers/payment-world.js";
import { builtNativeProver } from "../../sdk/prover/native-process.js";
import { elapsedMs, percentile, printTable, writeResults } from "../report.js";

const SETTLES = Number(process.env.BENCH_SETTLES ?? 10);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 4);
const AGENT_PAYMENTS = Number(process.env.BENCH_AGENT_PAYMENTS ?? 3);
/** Block time of the batching comparison: Base's 2 s. */
const BLOCK_MS = Number(process.env.BENCH_BLOCK_MS ?? 2000);

const PROVER = process.env.BENCH_PROVER ?? "auto";
const proverInUse = PROVER === "wasm" || (PROVER === "auto" && !builtNativeProver()) ? "wasm" : "native";

const world = await startPaymentWorld({ relayer: { prover: PROVER } });
// Closed on failure too: its servers and the chain would keep the process alive.
try {
  const required = await readPaymentRequired(await fetch(world.sellers.v2.resourceUrl));
  const accepted = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
  const resource = required!.x402Version === 2 ? required!.resource : undefined;

  console.log(`depositing ${4 * (SETTLES + 1) + 3 * AGENTS * AGENT_PAYMENTS} notes...`);
  let tag = 1_000;
  const depositors = Object.values(world.chain.depositors);
  const notes = async (count: number): Promise<Note[]> => {
    const made: Note[] = [];
    for (let i = 0; i < count; i++) made.push(await deposit(world.chain, depositors[tag % depositors.length]!, tag++, 1_000_000n));
    return made;
  };
  const settleNotes = await notes(SETTLES + 1);
  const x402Notes = await notes(SETTLES + 1);
  const provenSettleNotes = await notes(SETTLES + 1);
  const provenX402Notes = await notes(SETTLES + 1);
  const agentNotes = await notes(AGENTS * AGENT_PAYMENTS);
  const blockNotes = { batched: await notes(AGENTS * AGENT_PAYMENTS), alone: await notes(AGENTS * AGENT_PAYMENTS) };
  await world.syncIndexer();

  interface Timed {
    ms: number;
    status: number;
    body: Record<string, unknown>;
  }

  const timed = async (route: string, body: unknown, relayer: RunningRelayer = world.relayer): Promise<Timed> => {
    let answer!: { status: number; body: Record<string, unknown> };
    const ms = await elapsedMs(async () => {
      answer = await relayer.post(route, body);
    });
    if (answer.status !== 200) throw new Error(`${route} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return { ms, ...answer };
  };

  const settleBody = (note: Note) => ({
    paymentDetails: { payTo: Wallet.createRandom().address, maxAmountRequired: world.price.toString() },
    serviceDeposit: noteToWire(note),
  });
  const settleX402Body = (note: Note) => ({ accepts: accepted, resource, serviceDeposit: noteToWire(note), acceptNotPrivate: true });

  const summary = (timings: number[]) => ({
    count: timings.length,
    p50Ms: Math.round(percentile(timings, 50)),
    p95Ms: Math.round(percentile(timings, 95)),
  });

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

  const facilitator = new FacilitatorClient(world.relayer.url);
  const entrypoint = await world.chain.facilitator.entrypoint.getAddress();
  const takeBps = BigInt((await facilitator.supported()).settleX402!.takeBps);

  /** The agent's trees, kept between its payments: each fetches and hashes only the leaves added since. */
  const agentTrees = emptyTrees();
  let agentProver = "none yet";

  /** One non-custodial payment as an agent makes it: quote, trees and proof here, then the proof-carrying settle. */
  async function provenPayment(note: Note, x402: boolean): Promise<{ totalMs: number; proofMs: number; quoteAndTreesMs: number; relayMs: number }> {
    const invoice = { payTo: Wallet.createRandom().address, maxAmountRequired: world.price.toString() };
    const fields = x402 ? { accepts: accepted, resource, acceptNotPrivate: true } : { paymentDetails: invoice };
    const started = performance.now();
    const { body, proofTimeMs, engine } = await proveLocally({
      facilitator,
      prover: sharedProver(),
      trees: agentTrees,
      note,
      expected: x402
        ? { route: "settle-x402", withdrawnValue: grossForNet(world.price, takeBps), feeBps: takeBps, processooor: entrypoint }
        : { route: "settle", withdrawnValue: world.price, feeBps: takeBps, processooor: entrypoint, recipient: invoice.payTo },
      fields,
    });
    const proven = performance.now();
    agentProver = engine;
    const relay = await timed(x402 ? "/api/facilitator/settle-x402-proof" : "/api/facilitator/settle-proof", body);
    return { totalMs: performance.now() - started, proofMs: proofTimeMs, quoteAndTreesMs: proven - started - proofTimeMs, relayMs: relay.ms };
  }

  /** Non-custodial payments one after another, the first as a warm-up (the agent's prover starts) left out. */
  async function sequentialProven(spent: Note[], x402: boolean) {
    const measured: Awaited<ReturnType<typeof provenPayment>>[] = [];
    for (const [i, note] of spent.entries()) {
      const payment = await provenPayment(note, x402);
      if (i > 0) measured.push(payment);
    }
    const of = (part: keyof (typeof measured)[number]) => measured.map((payment) => payment[part]);
    return { ...summary(of("totalMs")), clientProof: summary(of("proofMs")), quoteAndTreesP50Ms: Math.round(percentile(of("quoteAndTreesMs"), 50)), relay: summary(of("relayMs")) };
  }

  console.log(`${SETTLES} sequential settles, client proof + relay...`);
  const provenSettle = await sequentialProven(provenSettleNotes, false);
  console.log(`${SETTLES} sequential settle-x402, client proof + relay...`);
  const provenX402 = await sequentialProven(provenX402Notes, true);

  /**
   * AGENTS agents, AGENT_PAYMENTS server-proof settle-x402 payments each, at once, through `relayer`. Checks that
   * every settle's funding transaction was mined and spent that settle's note; counts the transactions (a batch
   * carries several settles) and their gas.
   */
  async function concurrentPayments(relayer: RunningRelayer, spent: Note[]) {
    const answers: (Timed & { note: Note })[] = [];
    const wallMs = await elapsedMs(() =>
      Promise.all(
        Array.from({ length: AGENTS }, async (_, agent) => {
          for (let payment = 0; payment < AGENT_PAYMENTS; payment++) {
            const note = spent[agent * AGENT_PAYMENTS + payment]!;
            answers.push({ ...(await timed("/api/facilitator/settle-x402", settleX402Body(note), relayer)), note });
          }
        }),
      ),
    );
    const pool = world.chain.facilitator.privacyPool;
    const txs = new Map<string, bigint>();
    for (const { body, note } of answers) {
      const receipt = await world.provider.getTransactionReceipt(body.fundingTxHash as string);
      const spends = receipt?.status === 1 ? receipt.logs.map((log) => pool.interface.parseLog(log)).filter((event) => event?.name === "Withdrawn") : [];
      if (!spends.some((event) => event!.args.spentNullifierHash === nullifierHashOf(note.nullifier))) {
        throw new Error(`settle ${body.fundingTxHash} did not spend its note on chain`);
      }
      txs.set(receipt!.hash, receipt!.gasUsed);
    }
    const gas = [...txs.values()].reduce((sum, used) => sum + used, 0n);
    return {
      agents: AGENTS,
      settles: answers.length,
      ...summary(answers.map(({ ms }) => ms)),
      errors: 0,
      transactions: txs.size,
      gasPerSettle: Number(gas / BigInt(answers.length)),
      settlesPerMinute: Math.round((answers.length / wallMs) * 60_000),
    };
  }

  console.log(`${AGENTS} agents, ${AGENT_PAYMENTS} settle-x402 each, at once (a block per transaction)...`);
  const concurrent = await concurrentPayments(world.relayer, agentNotes);

  // Batching pays off where a relay waits for its block: the same load on blocks every BLOCK_MS, with batching (the
  // relayer's default) and with it off (a second relayer on the same chain, store of its own).
  const chainProvider = world.chain.connection.provider;
  await chainProvider.request({ method: "evm_setAutomine", params: [false] });
  await chainProvider.request({ method: "evm_setIntervalMining", params: [BLOCK_MS] });
  const unbatched = await startRelayer(buildRelayerConfig(world.chain, world.indexer, { pricingMode: "paid", prover: PROVER, relayBatch: "false" }));
  let onBlocks: { blockMs: number; batched: Awaited<ReturnType<typeof concurrentPayments>>; alone: Awaited<ReturnType<typeof concurrentPayments>> };
  try {
    console.log(`the same on ${BLOCK_MS} ms blocks, batching on...`);
    const batched = await concurrentPayments(world.relayer, blockNotes.batched);
    console.log(`the same on ${BLOCK_MS} ms blocks, batching off...`);
    onBlocks = { blockMs: BLOCK_MS, batched, alone: await concurrentPayments(unbatched, blockNotes.alone) };
  } finally {
    await unbatched.stop();
    await chainProvider.request({ method: "evm_setIntervalMining", params: [0] });
    await chainProvider.request({ method: "evm_setAutomine", params: [true] });
  }

  const withProof = ({ ms, proofMs }: { ms: number[]; proofMs: number[] }) => ({ ...summary(ms), proofP50Ms: Math.round(percentile(proofMs, 50)) });
  const results = {
    prover: proverInUse,
    settle: withProof(settleMs),
    settleX402: withProof(x402Ms),
    nonCustodial: { agentProver, settle: provenSettle, settleX402: provenX402 },
    concurrent,
    concurrentOnBlocks: onBlocks,
    sequentialSettlesPerMinute: Math.round(60_000 / (x402Ms.ms.reduce((sum, ms) => sum + ms, 0) / x402Ms.ms.length)),
  };

  const onLoad = (load: typeof concurrent) =>
    `p50 ${load.p50Ms} ms, p95 ${load.p95Ms} ms, ${load.settlesPerMinute}/min, ${load.errors} errors, ` +
    `${load.transactions} transactions, ${load.gasPerSettle.toLocaleString("en-US")} gas a settle`;
  const serverProof = (result: typeof results.settle) =>
    `p50 ${result.p50Ms} ms, p95 ${result.p95Ms} ms (proof p50 ${result.proofP50Ms} ms)`;
  const clientProof = (result: typeof provenSettle) =>
    `p50 ${result.p50Ms} ms, p95 ${result.p95Ms} ms (client proof p50 ${result.clientProof.p50Ms} / p95 ${result.clientProof.p95Ms} ms, ` +
    `quote + trees p50 ${result.quoteAndTreesP50Ms} ms, relay p50 ${result.relay.p50Ms} / p95 ${result.relay.p95Ms} ms)`;
  printTable(
    ["measurement", "result"],
    [
      ["relayer's prover / agent's prover", `${proverInUse} / ${agentProver}`],
      [`settle, server proof, sequential (${results.settle.count})`, serverProof(results.settle)],
      [`settle, client proof + relay, sequential (${provenSettle.count})`, clientProof(provenSettle)],
      [`settle-x402, server proof, sequential (${results.settleX402.count})`, serverProof(results.settleX402)],
      [`settle-x402, client proof + relay, sequential (${provenX402.count})`, clientProof(provenX402)],
      [`settle-x402, ${AGENTS} agents at once (${concurrent.settles}), automine`, onLoad(concurrent)],
      [`  the same on ${BLOCK_MS} ms blocks, batching on`, onLoad(results.concurrentOnBlocks.batched)],
      [`  the same on ${BLOCK_MS} ms blocks, batching off`, onLoad(results.concurrentOnBlocks.alone)],
      ["settles per minute, sequential / concurrent (automine)", `${results.sequentialSettlesPerMinute} / ${concurrent.settlesPerMinute}`],
    ],
  );
  await writeResults("settle", results);
} finally {
  await world.close();
}

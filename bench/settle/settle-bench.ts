// npm run bench:settle
//
// Latency of a settle and a settle-x402 on the local chain, each a real proof and a real relay, in both custodies:
// the relayer proves from the note (server proof: POST /api/facilitator/settle and /settle-x402, server time), and
// the agent proves (client proof + relay: quote, trees, the SDK's prover, then /settle-proof or /settle-x402-proof;
// end to end as the agent sees it, and its parts). Each measurement is taken on a pool that already holds
// BENCH_LEAVES leaves (a comma-separated list, default "1000,100000"): the pool's storage and the indexer's
// database are put in the state that many deposits leave (bench/settle/seeded-pool.ts), every label approved,
// then the bench's own notes are real deposits on top, and the indexer's state root must equal the pool's.
//
// At each leaf count: BENCH_SETTLES sequential payments of each kind (default 10, after one warm-up); a cold agent's
// first payment; the CPU a trees request costs; BENCH_AGENTS agents (default 4) each making BENCH_AGENT_PAYMENTS
// server-proof settle-x402 payments (default 3) at once on the automining chain, and from BENCH_LOAD_LEAVES leaves
// the trees load test. Then the load real agents make, on blocks every BENCH_BLOCK_MS (default 2000, Base's) with
// the indexer following the chain, in each custody of BENCH_CUSTODIES: open-loop arrivals at each rate of
// BENCH_OPEN_LOOP_RATES, and one agent's bursts. The variables, their defaults and how each part is counted are in
// bench/README.md. Prints a table per leaf count and their comparison, and writes bench/results/settle.json (by leaf
// count).
//
// On the same blocks, BENCH_PAID_REQUESTS (default 10) rounds of whole paid requests (first 402 to the 200), after a
// warm-up, the methods interleaved at one block phase a round: by shielded proof through the relayer's seller routes
// and through the seller package's facilitator (the pool pays the seller), by the settle-x402 detour (the agent
// proves, the relayer funds a payer, the seller's facilitator settles its authorization), and a plain buyer's EIP-3009
// payment through the relayer's seller routes and through the reference facilitator; with the transactions and gas
// that landed on chain per payment (bench/settle/paid-request.ts).
//
// Last, on the same blocks, a private tab: an agent's first request to a batch-settlement seller (the tab's opening),
// BENCH_TAB_REQUESTS (default 100) requests after it, then a burst of BENCH_BURST_SIZE on the same tab
// (bench/settle/tab-latency.ts).
import { execFileSync, fork } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Wallet } from "ethers";
import { emptyTrees, NoteVault, proveLocally, saveTrees, type AgentTrees } from "../../sdk/agent/index.js";
import { FacilitatorClient, noteToWire } from "../../sdk/client/facilitator-client.js";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { sharedProver } from "../../sdk/prover/index.js";
import { INDEXER_ROUTES } from "../../indexer/api.js";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { readPaymentRequired, selectExactRequirement } from "../../sdk/x402/payment-required.js";
import { fundDepositor } from "../../test/contracts/helpers/notes.js";
import { TEST_TOKEN } from "../../test/indexer/helpers/indexer-harness.js";
import { deposit } from "../../test/indexer/helpers/pool-actions.js";
import { startPaymentWorld } from "../../test/x402/helpers/payment-world.js";
import { builtNativeProver } from "../../sdk/prover/native-process.js";
import { elapsedMs, percentile, printTable, writeResults } from "../report.js";
import type { AgentLoad, AgentLoadPlan, PaymentRecord } from "./agent-load.js";
import { measurePaidRequests, PAID_REQUEST_METHODS, type PaidRequestMethod } from "./paid-request.js";
import { seedPool } from "./seeded-pool.js";
import { measureTabLatency, type TabLatency } from "./tab-latency.js";

const LEAVES = (process.env.BENCH_LEAVES ?? "1000,100000").split(",").map(Number);
const SETTLES = Number(process.env.BENCH_SETTLES ?? 10);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 4);
const AGENT_PAYMENTS = Number(process.env.BENCH_AGENT_PAYMENTS ?? 3);
/** Block time of the agents' loads: Base's 2 s. */
const BLOCK_MS = Number(process.env.BENCH_BLOCK_MS ?? 2000);
const CUSTODIES = (process.env.BENCH_CUSTODIES ?? "custodial,non-custodial").split(",") as AgentLoadPlan["custody"][];
/** Open-loop arrival rates, payments a minute. */
const OPEN_LOOP_RATES = (process.env.BENCH_OPEN_LOOP_RATES ?? "60,120").split(",").map(Number);
const OPEN_LOOP_PAYMENTS = Number(process.env.BENCH_OPEN_LOOP_PAYMENTS ?? 60);
const OPEN_LOOP_AGENTS = Number(process.env.BENCH_OPEN_LOOP_AGENTS ?? 4);
/** Notes in each open-loop agent's wallet: its payments run at once, up to this many. */
const AGENT_NOTES = Number(process.env.BENCH_AGENT_NOTES ?? 4);
const ARRIVAL_SEED = Number(process.env.BENCH_ARRIVAL_SEED ?? 1);
/** One agent's burst: this many payments at once, from a wallet of as many notes. */
const BURST_SIZE = Number(process.env.BENCH_BURST_SIZE ?? 8);
const BURSTS = Number(process.env.BENCH_BURSTS ?? 3);
const BURST_GAP_MS = Number(process.env.BENCH_BURST_GAP_MS ?? 2 * BLOCK_MS);
/** taskset CPU lists: the agents' processes (and the trees load's clients) on the one, the relayer, its indexer and the chain on the other. */
const AGENT_CPUS = process.env.BENCH_AGENT_CPUS;
const RELAYER_CPUS = process.env.BENCH_RELAYER_CPUS;
const TREES_REQUESTS = Number(process.env.BENCH_TREES_REQUESTS ?? 20);
const LOAD_LEAVES = Number(process.env.BENCH_LOAD_LEAVES ?? 100_000);
const LOAD_CLIENTS = Number(process.env.BENCH_LOAD_CLIENTS ?? 20);
/** Rounds of the load test, each the agents paying without the clients, then with them: the two alternate. */
const LOAD_ROUNDS = Number(process.env.BENCH_LOAD_ROUNDS ?? 3);
/** Whole paid requests (first 402 to the 200) of each method on blocks: shielded proof and the settle-x402 detour. */
const PAID_REQUESTS = Number(process.env.BENCH_PAID_REQUESTS ?? 10);
/** Requests on one private tab after its first, one after another; then a burst of BENCH_BURST_SIZE on the same tab. */
const TAB_REQUESTS = Number(process.env.BENCH_TAB_REQUESTS ?? 100);

const PROVER = process.env.BENCH_PROVER ?? "auto";
const NOTE_VALUE = 1_000_000n;
const VAULT_PASSPHRASE = "bench agent passphrase";
const proverInUse = PROVER === "wasm" || (PROVER === "auto" && !builtNativeProver()) ? "wasm" : "native";
const TREES_PATH = "/api/facilitator/trees";

/**
 * Bytes of the relayer's answers that came back through fetch (their content-length), by path: the agent's
 * FacilitatorClient and the bench's relays fetch through the global fetch, so a payment's share is the difference
 * around it.
 */
const fetched = { trees: 0, all: 0, origin: "" };
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const response = await realFetch(input, init);
  const url = new URL(input instanceof Request ? input.url : input);
  if (url.origin !== fetched.origin) return response;
  const length = response.headers.get("content-length");
  if (length === null) throw new Error(`${url.pathname} answered without content-length: the bench cannot count its bytes`);
  fetched.all += Number(length);
  if (url.pathname === TREES_PATH) fetched.trees += Number(length);
  return response;
};

/** What bench/settle/http-readers.ts reports. */
interface ReadersReport {
  statuses: Record<string, number>;
  bytes: number;
  lastBytes: number;
  ms: number;
}

if (RELAYER_CPUS !== undefined) execFileSync("taskset", ["-a", "-p", "-c", RELAYER_CPUS, String(process.pid)], { stdio: "ignore" });

/** A bench process of its own (`file`, next to this one), as another machine would be: on BENCH_AGENT_CPUS when set. */
function forkBenchProcess(file: string, args: string[] = []) {
  const modulePath = fileURLToPath(new URL(file, import.meta.url));
  const pinned = AGENT_CPUS === undefined ? {} : { execPath: "taskset", execArgv: ["-c", AGENT_CPUS, process.execPath, "--import", "tsx"] };
  return fork(modulePath, args, { execArgv: ["--import", "tsx"], ...pinned });
}

/** The one message a bench process answers with: resolves with it, rejects when the process exits first. */
function answerOf<T>(child: ReturnType<typeof fork>, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    child.on("message", (message) => {
      if (typeof message === "object" && message !== null) resolve(message as T);
    });
    child.on("exit", (code) => reject(new Error(`${what} exited with ${code} before reporting`)));
  });
}

/**
 * bench/settle/http-readers.ts in a process of its own, loaded: `readers` readers of `url`, `count` requests each (0:
 * until `stop`). `run` sets them reading and resolves with their report.
 */
async function startReaders(url: string, { readers = 1, count = 0, token = "" } = {}) {
  const child = forkBenchProcess("./http-readers.ts", [url, String(readers), String(count), token]);
  const report = answerOf<ReadersReport>(child, `the readers of ${url}`);
  await once(child, "message");
  return {
    run: () => {
      child.send("go");
      return report;
    },
    stop: () => child.send("stop"),
  };
}

/** Runs `plan` in bench/settle/agents.ts, a process of its own: the payments as the agents lived them. */
async function runAgents(plan: AgentLoadPlan): Promise<PaymentRecord[]> {
  const child = forkBenchProcess("./agents.ts");
  const answer = answerOf<{ records?: PaymentRecord[]; error?: string }>(child, "the agents' process");
  await once(child, "message");
  child.send(plan);
  const { records, error } = await answer;
  if (records === undefined) throw new Error(`the agents' process failed: ${error}`);
  return records;
}

const summary = (timings: number[]) => ({
  count: timings.length,
  p50Ms: Math.round(percentile(timings, 50)),
  p95Ms: Math.round(percentile(timings, 95)),
});

async function measureAt(leafCount: number) {
  console.log(`\n--- a pool holding ${leafCount.toLocaleString("en-US")} leaves: filling the pool and the indexer...`);
  let seededRoot = 0n;
  const world = await startPaymentWorld({
    relayer: { prover: PROVER },
    // Payment windows are timed from the wall clock, as on Base: the seeding's bursts of blocks must not run ahead of it.
    wallClockBlocks: true,
    beforeIndexer: async (chain, config) => {
      seededRoot = await seedPool(chain, config, leafCount);
    },
  });
  // Closed on failure too: its servers and the chain would keep the process alive.
  try {
    const pool = world.chain.facilitator.privacyPool;
    fetched.origin = new URL(world.relayer.url).origin;
    const status = world.indexer.indexer.queries.status();
    if (status.leafCount !== leafCount || world.indexer.indexer.sync.stateTree.root !== seededRoot) {
      throw new Error(`the indexer started with ${status.leafCount} leaves, not the ${leafCount} seeded`);
    }
    const required = await readPaymentRequired(await fetch(world.sellers.v2.resourceUrl));
    const accepted = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
    const resource = required!.x402Version === 2 ? required!.resource : undefined;

    const loadTest = leafCount >= LOAD_LEAVES;
    const batch = AGENTS * AGENT_PAYMENTS;
    const walletNotes = OPEN_LOOP_AGENTS * AGENT_NOTES + BURST_SIZE;
    const noteCount = 4 * (SETTLES + 1) + batch + CUSTODIES.length * walletNotes + 1 + (loadTest ? 2 * LOAD_ROUNDS * batch : 0);
    console.log(`depositing ${noteCount} notes...`);
    let tag = 1_000;
    const depositors = Object.values(world.chain.depositors);
    // Funded once, each deposit a block: the local chain stamps every block at least a second after the last, and
    // a chain clock far ahead of the wall clock makes the agent refuse a quote's payment window.
    for (const depositor of depositors) await fundDepositor(world.chain.facilitator, depositor, NOTE_VALUE * BigInt(Math.ceil(noteCount / depositors.length)));
    const notes = async (count: number): Promise<Note[]> => {
      const made: Note[] = [];
      for (let i = 0; i < count; i++) made.push(await deposit(world.chain, depositors[tag % depositors.length]!, tag++, NOTE_VALUE, { funded: true }));
      return made;
    };
    const settleNotes = await notes(SETTLES + 1);
    const x402Notes = await notes(SETTLES + 1);
    const provenSettleNotes = await notes(SETTLES + 1);
    const provenX402Notes = await notes(SETTLES + 1);
    const [coldAgentNote] = await notes(1);
    const agentNotes = await notes(batch);
    const loadNotes = loadTest ? await notes(2 * LOAD_ROUNDS * batch) : [];
    // The agents' wallets, a vault each, per custody: each open-loop agent's AGENT_NOTES notes, and the burst agent's.
    const vaultDir = mkdtempSync(path.join(tmpdir(), "bench-wallets-"));
    const wallet = async (name: string, count: number) => {
      const file = path.join(vaultDir, `${name}.vault`);
      const vault = await NoteVault.create(file, VAULT_PASSPHRASE);
      for (const note of await notes(count)) await vault.save(note);
      await vault.close();
      return file;
    };
    const wallets = new Map<AgentLoadPlan["custody"], { openLoop: string[]; burst: string }>();
    for (const custody of CUSTODIES) {
      const openLoop: string[] = [];
      for (let agent = 0; agent < OPEN_LOOP_AGENTS; agent++) openLoop.push(await wallet(`${custody}-agent-${agent}`, AGENT_NOTES));
      wallets.set(custody, { openLoop, burst: await wallet(`${custody}-burst`, BURST_SIZE) });
    }
    await world.syncIndexer();
    const indexerRoot = world.indexer.indexer.sync.stateTree.root;
    const poolRoot = await pool.currentRoot();
    const poolSize = Number(await pool.currentTreeSize());
    if (indexerRoot !== poolRoot || world.indexer.indexer.sync.stateTree.size !== poolSize || poolSize <= leafCount) {
      throw new Error(`after the real deposits the indexer's state root ${indexerRoot} is not the pool's ${poolRoot}: the seeded pool is inconsistent`);
    }
    if (!world.indexer.indexer.queries.status().aspRootMatches) throw new Error("the curator did not publish the ASP root of the seeded and real labels");

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

    const facilitator = new FacilitatorClient(world.relayer.url);
    const entrypoint = await world.chain.facilitator.entrypoint.getAddress();
    const takeBps = BigInt((await facilitator.supported()).settleX402!.takeBps);

    /** The agent's trees, kept between its payments: each fetches and hashes only the leaves added since. */
    const agentTrees = emptyTrees();
    let agentProver = "none yet";

    /** One non-custodial payment as an agent makes it: quote, trees and proof here, then the proof-carrying settle. */
    async function provenPayment(note: Note, x402: boolean, trees: AgentTrees = agentTrees) {
      const invoice = { payTo: Wallet.createRandom().address, maxAmountRequired: world.price.toString() };
      const fields = x402 ? { accepts: accepted, resource, acceptNotPrivate: true } : { paymentDetails: invoice };
      const before = { ...fetched };
      const started = performance.now();
      const { body, proofTimeMs, engine } = await proveLocally({
        facilitator,
        prover: sharedProver(),
        trees,
        note,
        expected: x402
          ? { route: "settle-x402", withdrawnValue: grossForNet(world.price, takeBps), feeBps: takeBps, processooor: entrypoint, accepted }
          : { route: "settle", withdrawnValue: world.price, feeBps: takeBps, processooor: entrypoint, recipient: invoice.payTo },
        fields,
      });
      const proven = performance.now();
      agentProver = engine;
      const relay = await timed(x402 ? "/api/facilitator/settle-x402-proof" : "/api/facilitator/settle-proof", body);
      return {
        relayBody: relay.body,
        totalMs: performance.now() - started,
        proofMs: proofTimeMs,
        quoteAndTreesMs: proven - started - proofTimeMs,
        relayMs: relay.ms,
        treesBytes: fetched.trees - before.trees,
        // The quote, the trees and the relay's answer.
        fetchedBytes: fetched.all - before.all,
      };
    }

    /** Non-custodial payments one after another, the first as a warm-up (the agent's prover starts) left out. */
    async function sequentialProven(spent: Note[], x402: boolean) {
      const measured: Awaited<ReturnType<typeof provenPayment>>[] = [];
      for (const [i, note] of spent.entries()) {
        const payment = await provenPayment(note, x402);
        if (i > 0) measured.push(payment);
      }
      const of = (part: Exclude<keyof (typeof measured)[number], "relayBody">) => measured.map((payment) => payment[part]);
      return {
        ...summary(of("totalMs")),
        clientProof: summary(of("proofMs")),
        quoteAndTreesP50Ms: Math.round(percentile(of("quoteAndTreesMs"), 50)),
        relay: summary(of("relayMs")),
        treesBytesP50: percentile(of("treesBytes"), 50),
        fetchedBytesP50: percentile(of("fetchedBytes"), 50),
      };
    }

    console.log(`${SETTLES} sequential settles, client proof + relay...`);
    const provenSettle = await sequentialProven(provenSettleNotes, false);
    console.log(`${SETTLES} sequential settle-x402, client proof + relay...`);
    const provenX402 = await sequentialProven(provenX402Notes, true);

    console.log("a cold agent's first settle-x402 (no trees yet)...");
    const cold = await provenPayment(coldAgentNote!, true, emptyTrees());
    const coldAgent = {
      totalMs: Math.round(cold.totalMs),
      proofMs: Math.round(cold.proofMs),
      quoteAndTreesMs: Math.round(cold.quoteAndTreesMs),
      relayMs: Math.round(cold.relayMs),
      treesBytes: cold.treesBytes,
    };

    /**
     * CPU of this process (the relayer and its indexer, serving) and wall time per request to `url` (with the
     * indexer's token when `token`), the answers read by a child process, its first request a warm-up left out.
     */
    async function servingCostOf(url: string, token?: string) {
      const read = async (count: number) => {
        const readers = await startReaders(url, { count, token });
        const cpu = process.cpuUsage();
        const { statuses, lastBytes, ms } = await readers.run();
        const used = process.cpuUsage(cpu);
        if (statuses["200"] !== count) throw new Error(`${url} answered ${JSON.stringify(statuses)}`);
        return { cpuMs: (used.user + used.system) / 1000 / count, wallMs: ms / count, bytes: lastBytes };
      };
      await read(1);
      return read(TREES_REQUESTS);
    }
    const indexerTreeLeaves = (query: Record<string, number | bigint>) =>
      `${world.indexer.url}${INDEXER_ROUTES.treeLeaves}?${new URLSearchParams(Object.entries(query).map(([name, value]): [string, string] => [name, String(value)]))}`;
    /**
     * A trees request through the relayer costs this process the relayer's serving it from its cache and the
     * indexer's answer to the relayer's refresh of it (the leaves after those the cache holds: none new here); the
     * difference is the relayer's CPU alone. The indexer's own route answering the same request is shown beside.
     */
    async function treesCost(from: { state: number; asp: number }) {
      const viaRelayer = await servingCostOf(`${world.relayer.url}${TREES_PATH}?stateFrom=${from.state}&aspFrom=${from.asp}`);
      const { state, asp } = world.indexer.indexer.queries.trees();
      const refresh = await servingCostOf(
        indexerTreeLeaves({ stateFrom: state.size, stateFromRoot: state.root, aspFrom: asp.size, aspFromRoot: asp.root }),
        TEST_TOKEN,
      );
      const direct = await servingCostOf(indexerTreeLeaves({ stateFrom: from.state, aspFrom: from.asp }), TEST_TOKEN);
      const round = (ms: number) => Number(ms.toFixed(2));
      return {
        bytes: viaRelayer.bytes,
        relayerCpuMs: round(viaRelayer.cpuMs - refresh.cpuMs),
        servingCpuMs: round(viaRelayer.cpuMs),
        indexerRefreshCpuMs: round(refresh.cpuMs),
        indexerDirectCpuMs: round(direct.cpuMs),
        wallMs: round(viaRelayer.wallMs),
      };
    }
    console.log(`${TREES_REQUESTS} trees requests each, a warm agent's and whole, through the relayer and to the indexer...`);
    const { size: stateSize } = world.indexer.indexer.sync.stateTree;
    const aspSize = world.indexer.indexer.queries.status().aspLabelCount;
    // A warm agent's first: the garbage of whole trees would be collected during the next measurement.
    const warmTrees = await treesCost({ state: stateSize - 2, asp: aspSize - 1 });
    const treesRequest = { warm: warmTrees, whole: await treesCost({ state: 0, asp: 0 }) };

    /**
     * Checks that each settle's funding transaction was mined and spent the note of `nullifierHash`; the distinct
     * transactions (a batch carries several settles) and their gas per settle.
     */
    async function spentOnChain(settles: { txHash: string; nullifierHash: bigint }[]) {
      const txs = new Map<string, bigint>();
      for (const { txHash, nullifierHash } of settles) {
        const receipt = await world.provider.getTransactionReceipt(txHash);
        const spends = receipt?.status === 1 ? receipt.logs.map((log) => pool.interface.parseLog(log)).filter((event) => event?.name === "Withdrawn") : [];
        if (!spends.some((event) => event!.args.spentNullifierHash === nullifierHash)) throw new Error(`settle ${txHash} did not spend its note on chain`);
        txs.set(receipt!.hash, receipt!.gasUsed);
      }
      const gas = [...txs.values()].reduce((sum, used) => sum + used, 0n);
      return { transactions: txs.size, gasPerSettle: settles.length === 0 ? 0 : Number(gas / BigInt(settles.length)) };
    }

    /**
     * AGENTS agents, AGENT_PAYMENTS server-proof settle-x402 payments each, at once, each agent's one after another.
     * Checks every settle on chain. A failed settle throws, unless `countFailures` (under load): then it is counted,
     * with the first failure's answer.
     */
    async function concurrentPayments(spent: Note[], { countFailures = false } = {}) {
      const answers: { ms: number; body: Record<string, unknown>; note: Note }[] = [];
      const failures: string[] = [];
      const wallMs = await elapsedMs(() =>
        Promise.all(
          Array.from({ length: AGENTS }, async (_, agent) => {
            const payments = spent.length / AGENTS;
            for (let payment = 0; payment < payments; payment++) {
              const note = spent[agent * payments + payment]!;
              try {
                answers.push({ ...(await timed("/api/facilitator/settle-x402", settleX402Body(note))), note });
              } catch (error) {
                if (!countFailures) throw error;
                failures.push(error instanceof Error ? error.message : String(error));
              }
            }
          }),
        ),
      );
      if (answers.length === 0) throw new Error(`every settle failed, the first: ${failures[0]}`);
      const onChain = await spentOnChain(answers.map(({ body, note }) => ({ txHash: body.fundingTxHash as string, nullifierHash: nullifierHashOf(note.nullifier) })));
      return {
        agents: AGENTS,
        settles: answers.length,
        ...summary(answers.map(({ ms }) => ms)),
        timingsMs: answers.map(({ ms }) => Math.round(ms)),
        errors: failures.length,
        ...(failures.length > 0 && { firstError: failures[0]!.slice(0, 300) }),
        ...onChain,
        settlesPerMinute: Math.round((answers.length / wallMs) * 60_000),
      };
    }

    console.log(`${AGENTS} agents, ${AGENT_PAYMENTS} settle-x402 each, at once (a block per transaction)...`);
    const concurrent = await concurrentPayments(agentNotes);

    /**
     * LOAD_CLIENTS clients fetching whole trees in a loop, in a process of their own (startReaders)
     * as other machines would be, while the agents pay at once; the answers are counted by status.
     */
    async function underTreesLoad(spent: Note[]) {
      const clients = await startReaders(`${world.relayer.url}${TREES_PATH}?stateFrom=0&aspFrom=0`, { readers: LOAD_CLIENTS });
      const report = clients.run();
      let paying!: Awaited<ReturnType<typeof concurrentPayments>>;
      const wallMs = await elapsedMs(async () => {
        try {
          paying = await concurrentPayments(spent, { countFailures: true });
        } finally {
          clients.stop();
        }
      });
      const { statuses, bytes } = await report;
      return {
        clients: LOAD_CLIENTS,
        treesPerSecond: Number((((statuses["200"] ?? 0) / wallMs) * 1000).toFixed(1)),
        treesMiBPerSecond: Number((bytes / 2 ** 20 / (wallMs / 1000)).toFixed(1)),
        treesAnswers: statuses,
        ...paying,
      };
    }
    /**
     * LOAD_ROUNDS rounds of the agents paying at once without the clients, then with them: alternating, so that the
     * machine's drift shows in both. The p50s are of every round's payments together.
     */
    async function loadTestRounds() {
      const quiet: Awaited<ReturnType<typeof concurrentPayments>>[] = [];
      const loaded: Awaited<ReturnType<typeof underTreesLoad>>[] = [];
      for (let round = 0; round < LOAD_ROUNDS; round++) {
        const notesOf = (phase: number) => loadNotes.slice((2 * round + phase) * batch, (2 * round + phase + 1) * batch);
        console.log(`round ${round + 1} of ${LOAD_ROUNDS}: the agents alone, then while ${LOAD_CLIENTS} clients fetch whole trees in a loop...`);
        quiet.push(await concurrentPayments(notesOf(0)));
        loaded.push(await underTreesLoad(notesOf(1)));
      }
      const all = (runs: { timingsMs: number[] }[]) => runs.flatMap((run) => run.timingsMs);
      const answers: Record<string, number> = {};
      for (const run of loaded) for (const [status, n] of Object.entries(run.treesAnswers)) answers[status] = (answers[status] ?? 0) + n;
      const alone = summary(all(quiet));
      const underClients = summary(all(loaded));
      return {
        rounds: LOAD_ROUNDS,
        clients: LOAD_CLIENTS,
        quiet: alone,
        loaded: underClients,
        p50Change: Number((underClients.p50Ms / alone.p50Ms - 1).toFixed(3)),
        errors: loaded.reduce((sum, run) => sum + run.errors, 0),
        treesPerSecond: Math.min(...loaded.map((run) => run.treesPerSecond)),
        treesMiBPerSecond: Math.min(...loaded.map((run) => run.treesMiBPerSecond)),
        treesAnswers: answers,
        runs: { quiet, loaded },
      };
    }
    const underLoad = loadTest ? await loadTestRounds() : null;

    /** Brings the warm agent's trees up to the relayer's: a load's agents start from them, as agents that paid a moment ago. */
    async function warmAgentTrees(): Promise<void> {
      const served = await facilitator.trees({ state: agentTrees.state.fetched, asp: agentTrees.asp.fetched });
      agentTrees.state.receive(served.state.from, served.state.leaves);
      agentTrees.asp.receive(served.asp.from, served.asp.leaves);
      await Promise.all([agentTrees.state.treeOf(agentTrees.state.fetched), agentTrees.asp.treeOf(agentTrees.asp.fetched)]);
    }
    const loadTreesFile = path.join(vaultDir, "warm.trees");

    /**
     * `load` made by the agents of the wallets `vaults` (one agent each) in `custody`, in a process of their own;
     * every settle checked on chain. End to end is from a payment's arrival to its settlement's answer; the relayer's
     * side from its settle request to that answer; the agent's proof and the quote and trees requests are apart.
     */
    async function agentLoad(custody: AgentLoadPlan["custody"], vaults: string[], load: AgentLoad) {
      await warmAgentTrees();
      await saveTrees(loadTreesFile, agentTrees);
      const network = { chainId: world.chainId, asset: world.asset };
      const plan = { relayerUrl: world.relayer.url, network, accepted, ...(resource !== undefined && { resource }), custody, vaults, passphrase: VAULT_PASSPHRASE, treesPath: loadTreesFile, load };
      const records = await runAgents(plan);
      const settled = records.filter((record) => record.error === undefined);
      const failed = records.filter((record) => record.error !== undefined);
      if (settled.length === 0) throw new Error(`every payment failed, the first: ${failed[0]?.error}`);
      const onChain = await spentOnChain(settled.map((record) => ({ txHash: record.fundingTxHash!, nullifierHash: BigInt(record.nullifierHash!) })));
      const of = (part: "totalMs" | "relayMs" | "proofMs" | "quoteAndTreesMs" | "noteWaitMs") => settled.flatMap((record) => (record[part] === undefined ? [] : [record[part]]));
      const summaryOf = (part: Parameters<typeof of>[0]) => (of(part).length === 0 ? null : summary(of(part)));
      const spanMs = Math.max(...settled.map((record) => record.arrivalMs + record.totalMs)) - Math.min(...records.map((record) => record.arrivalMs));
      return {
        custody,
        load,
        agents: vaults.length,
        payments: records.length,
        errors: failed.length,
        ...(failed.length > 0 && { firstError: failed[0]!.error }),
        endToEnd: summary(of("totalMs")),
        relayer: summaryOf("relayMs"),
        agentProof: summaryOf("proofMs"),
        quoteAndTrees: summaryOf("quoteAndTreesMs"),
        noteWait: { ...summary(of("noteWaitMs")), maxMs: Math.round(Math.max(...of("noteWaitMs"))) },
        settlesPerMinute: Math.round((settled.length / spanMs) * 60_000),
        ...onChain,
        records: records.map((record) => ({ ...record, arrivalMs: Math.round(record.arrivalMs), totalMs: Math.round(record.totalMs) })),
      };
    }

    // The load real agents make, on blocks every BLOCK_MS, the indexer following the chain as a deployed one does (so
    // change notes become spendable): in each custody, open-loop arrivals at each rate, then one agent's bursts.
    const chainProvider = world.chain.connection.provider;
    await chainProvider.request({ method: "evm_setAutomine", params: [false] });
    await chainProvider.request({ method: "evm_setIntervalMining", params: [BLOCK_MS] });
    const agentLoads: Awaited<ReturnType<typeof agentLoad>>[] = [];
    let paidRequests: Awaited<ReturnType<typeof measurePaidRequests>>;
    let privateTab: TabLatency;
    try {
      await world.whileIndexerFollows(async () => {
        for (const custody of CUSTODIES) {
          const { openLoop, burst } = wallets.get(custody)!;
          for (const perMinute of OPEN_LOOP_RATES) {
            console.log(`${custody}: ${OPEN_LOOP_PAYMENTS} payments arriving at random, ${perMinute} a minute, from ${OPEN_LOOP_AGENTS} agents of ${AGENT_NOTES} notes, on ${BLOCK_MS} ms blocks...`);
            agentLoads.push(await agentLoad(custody, openLoop, { kind: "open-loop", perMinute, payments: OPEN_LOOP_PAYMENTS, seed: ARRIVAL_SEED }));
          }
          console.log(`${custody}: one agent's ${BURSTS} bursts of ${BURST_SIZE} payments at once, from ${BURST_SIZE} notes...`);
          agentLoads.push(await agentLoad(custody, [burst], { kind: "burst", size: BURST_SIZE, bursts: BURSTS, gapMs: BURST_GAP_MS }));
        }
      });
      console.log(`whole paid requests on ${BLOCK_MS} ms blocks, ${PAID_REQUESTS} rounds of each method interleaved: shielded proof through the relayer's routes and the seller package's facilitator, the settle-x402 detour, plain EIP-3009 through the routes and the reference facilitator...`);
      paidRequests = await measurePaidRequests(world, { payments: PAID_REQUESTS, blockMs: BLOCK_MS });
      console.log(`a private tab on ${BLOCK_MS} ms blocks: its first request, ${TAB_REQUESTS} after it, a burst of ${BURST_SIZE}...`);
      privateTab = await measureTabLatency(world, { requests: TAB_REQUESTS, burst: BURST_SIZE });
    } finally {
      await chainProvider.request({ method: "evm_setIntervalMining", params: [0] });
      await chainProvider.request({ method: "evm_setAutomine", params: [true] });
    }

    const withProof = ({ ms, proofMs }: { ms: number[]; proofMs: number[] }) => ({ ...summary(ms), proofP50Ms: Math.round(percentile(proofMs, 50)) });
    return {
      leaves: leafCount,
      settle: withProof(settleMs),
      settleX402: withProof(x402Ms),
      nonCustodial: { agentProver, settle: provenSettle, settleX402: provenX402 },
      coldAgent,
      treesRequest,
      concurrent,
      concurrentUnderTreesLoad: underLoad,
      agentLoads: { blockMs: BLOCK_MS, runs: agentLoads },
      paidRequests,
      privateTab,
      sequentialSettlesPerMinute: Math.round(60_000 / (x402Ms.ms.reduce((sum, ms) => sum + ms, 0) / x402Ms.ms.length)),
    };
  } finally {
    await world.close();
  }
}

type AtLeaves = Awaited<ReturnType<typeof measureAt>>;
const runs: AtLeaves[] = [];
for (const leafCount of LEAVES) runs.push(await measureAt(leafCount));

const onLoad = (load: AtLeaves["concurrent"]) =>
  `p50 ${load.p50Ms} ms, p95 ${load.p95Ms} ms, ${load.settlesPerMinute}/min, ${load.errors} errors, ` +
  `${load.transactions} transactions, ${load.gasPerSettle.toLocaleString("en-US")} gas a settle`;
const serverProof = (result: AtLeaves["settle"]) => `p50 ${result.p50Ms} ms, p95 ${result.p95Ms} ms (proof p50 ${result.proofP50Ms} ms)`;
const clientProof = (result: AtLeaves["nonCustodial"]["settle"]) =>
  `p50 ${result.p50Ms} ms, p95 ${result.p95Ms} ms (client proof p50 ${result.clientProof.p50Ms} / p95 ${result.clientProof.p95Ms} ms, ` +
  `quote + trees p50 ${result.quoteAndTreesP50Ms} ms, relay p50 ${result.relay.p50Ms} / p95 ${result.relay.p95Ms} ms)`;
type AgentLoadRun = AtLeaves["agentLoads"]["runs"][number];
const loadName = ({ custody, load, agents }: AgentLoadRun) =>
  load.kind === "open-loop"
    ? `${custody}: open loop, ${load.perMinute}/min from ${agents} agents (${load.payments})`
    : `${custody}: one agent, ${load.bursts} bursts of ${load.size} at once`;
const p = (result: { p50Ms: number; p95Ms: number } | null) => (result === null ? "-" : `${result.p50Ms} / ${result.p95Ms}`);
const agentLoadResult = (run: AgentLoadRun) =>
  `end to end ${p(run.endToEnd)} ms; relayer ${p(run.relayer)} ms; agent's proof ${p(run.agentProof)} ms; quote + trees ${p(run.quoteAndTrees)} ms; ` +
  `note wait p95 ${run.noteWait.p95Ms} ms; ${run.load.kind === "open-loop" ? `${run.settlesPerMinute}/min, ` : ""}${run.errors} errors, ` +
  `${run.transactions} transactions, ${run.gasPerSettle.toLocaleString("en-US")} gas a settle`;
/** What each method of bench/settle/paid-request.ts is, in the table. */
const PAID_REQUEST_NAMES: Record<PaidRequestMethod, string> = {
  shieldedViaRoutes: "shielded proof, the relayer's seller routes",
  shieldedViaPackage: "shielded proof, the seller package's facilitator",
  detour: "settle-x402 detour, then the reference facilitator",
  plainViaRoutes: "plain EIP-3009, the relayer's seller routes",
  plainViaReference: "plain EIP-3009, the reference facilitator",
};
const against = ({ p50Ratio, pairedMedianDiffMs }: { p50Ratio: number; pairedMedianDiffMs: number }) =>
  `p50 ${(p50Ratio * 100).toFixed(0)}% of it; round by round (same block phase) median ${pairedMedianDiffMs >= 0 ? "+" : ""}${pairedMedianDiffMs} ms`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const count = (n: number) => n.toLocaleString("en-US");

for (const run of runs) {
  const { nonCustodial, coldAgent, treesRequest, concurrent, concurrentUnderTreesLoad: underLoad } = run;
  printTable(
    [`at ${count(run.leaves)} leaves`, "result"],
    [
      ["relayer's prover / agent's prover", `${proverInUse} / ${nonCustodial.agentProver}`],
      [`settle, server proof, sequential (${run.settle.count})`, serverProof(run.settle)],
      [`settle, client proof + relay, sequential (${nonCustodial.settle.count})`, clientProof(nonCustodial.settle)],
      [`settle-x402, server proof, sequential (${run.settleX402.count})`, serverProof(run.settleX402)],
      [`settle-x402, client proof + relay, sequential (${nonCustodial.settleX402.count})`, clientProof(nonCustodial.settleX402)],
      [
        "  bytes fetched per warm payment (p50): trees / all answers",
        `${kb(nonCustodial.settleX402.treesBytesP50)} / ${kb(nonCustodial.settleX402.fetchedBytesP50)}`,
      ],
      [
        "cold agent's first settle-x402 (no trees yet)",
        `${coldAgent.totalMs} ms (proof ${coldAgent.proofMs} ms, quote + trees ${coldAgent.quoteAndTreesMs} ms, relay ${coldAgent.relayMs} ms; trees ${kb(coldAgent.treesBytes)})`,
      ],
      ...(["warm", "whole"] as const).map((kind): [string, string] => {
        const cost = treesRequest[kind];
        return [
          `trees request, ${kind === "warm" ? "a warm agent's" : "whole"} (${kb(cost.bytes)}): relayer CPU / wall`,
          `${cost.relayerCpuMs} / ${cost.wallMs} ms (relayer and indexer: ${cost.servingCpuMs} ms CPU, of which the indexer's refresh answer ${cost.indexerRefreshCpuMs} ms; the indexer's route direct ${cost.indexerDirectCpuMs} ms)`,
        ];
      }),
      [`settle-x402, ${AGENTS} agents at once (${concurrent.settles}), automine`, onLoad(concurrent)],
      ...(underLoad === null
        ? []
        : ([
            [
              `  ${underLoad.rounds} rounds alternating: alone / while ${underLoad.clients} clients fetch whole trees`,
              `p50 ${underLoad.quiet.p50Ms} / ${underLoad.loaded.p50Ms} ms (${underLoad.p50Change >= 0 ? "+" : ""}${(underLoad.p50Change * 100).toFixed(0)}%), ` +
                `p95 ${underLoad.quiet.p95Ms} / ${underLoad.loaded.p95Ms} ms, ${underLoad.errors} errors; at least ${underLoad.treesPerSecond} whole trees/s, ` +
                `${underLoad.treesMiBPerSecond} MiB/s a round (answers ${JSON.stringify(underLoad.treesAnswers)})`,
            ],
          ] as [string, string][])),
      ...run.agentLoads.runs.map((load): [string, string] => [`${loadName(load)}, ${run.agentLoads.blockMs} ms blocks`, agentLoadResult(load)]),
      ["settles per minute, sequential / concurrent (automine)", `${run.sequentialSettlesPerMinute} / ${concurrent.settlesPerMinute}`],
      ...PAID_REQUEST_METHODS.map((method): [string, string] => {
        const paid = run.paidRequests.methods[method];
        return [
          `whole paid request on ${BLOCK_MS} ms blocks (${paid.payments}), ${PAID_REQUEST_NAMES[method]}`,
          `p50 ${paid.p50Ms} ms, p95 ${paid.p95Ms} ms (agent's proof p50 ${paid.proofP50Ms} ms, the rest ${paid.restP50Ms} ms); ` +
            `${paid.transactions} transaction(s), ${paid.gasPerPayment.toLocaleString("en-US")} gas a payment`,
        ];
      }),
      ["  plain, the relayer's routes against the reference facilitator", against(run.paidRequests.plainRoutesAgainstReference)],
      ["  shielded proof, the relayer's routes against the seller package's facilitator", against(run.paidRequests.shieldedRoutesAgainstPackage)],
      [
        "  shielded proof (routes) against the detour",
        `${against(run.paidRequests.shieldedAgainstDetour)}, gas ${((run.paidRequests.methods.shieldedViaRoutes.gasPerPayment / run.paidRequests.methods.detour.gasPerPayment - 1) * 100).toFixed(1)}%`,
      ],
      [
        `private tab, price ${run.privateTab.price}: the first request (the tab's opening)`,
        `${run.privateTab.open.ms} ms (agent's proof ${run.privateTab.open.proofMs} ms); ${run.privateTab.relays} relay, ${run.privateTab.proofs} proof for the whole tab`,
      ],
      [`  ${run.privateTab.sequential.requests} sequential requests after it (p50 / p95)`, `${run.privateTab.sequential.p50Ms} / ${run.privateTab.sequential.p95Ms} ms`],
      [`  a burst of ${run.privateTab.burst.requests} at once on the tab (p50 / p95)`, `${run.privateTab.burst.p50Ms} / ${run.privateTab.burst.p95Ms} ms`],
    ],
  );
}

const [base, ...larger] = runs;
const change = (now: number, then: number) => `${now} ms against ${then} ms (${now >= then ? "+" : ""}${((now / then - 1) * 100).toFixed(0)}%)`;
if (base !== undefined && larger.length > 0) {
  printTable(
    [`compared with ${count(base.leaves)} leaves (p50)`, "result"],
    larger.flatMap((run): [string, string][] => [
      [`${count(run.leaves)}: settle-x402, server proof, sequential`, change(run.settleX402.p50Ms, base.settleX402.p50Ms)],
      [`${count(run.leaves)}: settle-x402, warm agent (client proof + relay)`, change(run.nonCustodial.settleX402.p50Ms, base.nonCustodial.settleX402.p50Ms)],
      ...run.agentLoads.runs.flatMap((load, i): [string, string][] => {
        const then = base.agentLoads.runs[i];
        return then === undefined ? [] : [[`${count(run.leaves)}: ${loadName(load)}, end to end`, change(load.endToEnd.p50Ms, then.endToEnd.p50Ms)]];
      }),
      [`${count(run.leaves)}: cold agent's first payment`, change(run.coldAgent.totalMs, base.coldAgent.totalMs)],
    ]),
  );
}
await writeResults("settle", { prover: proverInUse, atLeaves: Object.fromEntries(runs.map((run) => [run.leaves, run])) });

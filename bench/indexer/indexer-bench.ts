// npm run bench:indexer
//
// How fast the indexer syncs and restarts: the cold-sync rate of the real indexer over HTTP JSON-RPC against
// BENCH_DEPOSITS real deposits (default 1,000, one per block; making them takes most of the run); at 10k and 100k
// leaves, the state tree rebuilt in memory, and a restart as `npm run indexer` makes one (createIndexer on a SQLite
// file that holds that many deposits, each a leaf with an approved label, and the ASP root of them on record: the
// store opened, both trees and the curator's state loaded), the first start of such a file (nothing of its trees
// saved yet, as after an upgrade) and the restarts after it; then a witness, the copy the ASP curator makes before
// changing a tree whose root is on chain, and the packed leaves of a trees answer. Prints a table and writes
// bench/results/indexer.json.
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { precommitmentOf } from "../../sdk/index.js";
import { configuredScreeningLists, type ScreeningLists } from "../../indexer/asp/screening-lists.js";
import { createIndexer } from "../../indexer/indexer.js";
import { SqliteIndexerStore } from "../../indexer/store/sqlite-store.js";
import { IndexedTree } from "../../indexer/trees.js";
import { buildIndexerConfig, startIndexer } from "../../test/indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../../test/indexer/helpers/local-chain.js";
import { secretsFor } from "../../test/contracts/helpers/notes.js";
import { benchLeaves, seedIndexerStore } from "../seeded-indexer-store.js";
import { elapsedMs, percentile, printTable, writeResults } from "../report.js";

const DEPOSITS = Number(process.env.BENCH_DEPOSITS ?? 1_000);
const TREE_SIZES = [10_000, 100_000];
const RESTARTS = 3;
const WITNESSES = 100;

interface SyncRate {
  deposits: number;
  events: number;
  blocks: number;
  seconds: number;
  eventsPerSecond: number;
}

/** Cold sync of the real indexer over HTTP JSON-RPC, against `DEPOSITS` deposits. */
async function measureSyncRate(chain: LocalChain): Promise<SyncRate> {
  const { entrypoint, usdc, addressBook } = chain.facilitator;
  const depositor = chain.depositors.alice;
  const value = 1_000_000n;
  await (await usdc.mint(depositor, value * BigInt(DEPOSITS))).wait();
  await (await usdc.connect(depositor).approve(entrypoint, value * BigInt(DEPOSITS))).wait();
  // One deposit per block: queueing many per block with automining off measured slower on the simulated chain.
  for (let i = 0; i < DEPOSITS; i++) {
    await (await entrypoint.connect(depositor).deposit(usdc, value, precommitmentOf(secretsFor(BigInt(i))))).wait();
  }

  const { indexer, stop } = await startIndexer(buildIndexerConfig(chain));
  const seconds = (await elapsedMs(() => indexer.sync.catchUp())) / 1000;
  const status = indexer.queries.status();
  if (status.leafCount !== DEPOSITS || !status.stateRootMatches) throw new Error("the indexer did not sync every deposit");
  await stop();
  const events = 2 * DEPOSITS; // LeafInserted and Deposited per deposit
  return {
    deposits: DEPOSITS,
    events,
    blocks: (status.lastBlock ?? 0) - addressBook.startBlock + 1,
    seconds,
    eventsPerSecond: Math.round(events / seconds),
  };
}

/**
 * A SQLite file for `chain`'s deployment holding `leaves` as deposits (one leaf each, every label approved by the
 * lists in force) and the ASP root of all their labels, as an indexer that synced them and published leaves it.
 */
async function storeOf(chain: LocalChain, leaves: bigint[], lists: ScreeningLists): Promise<string> {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), "indexer-bench-")), "bench.sqlite");
  const store = new SqliteIndexerStore(file);
  const { chainId, privacyPool } = chain.facilitator.addressBook;
  await store.bindDeployment(`${chainId}:${privacyPool}`);
  await seedIndexerStore(store, { leaves, cursor: { number: 1, hash: `0x${"00".repeat(32)}` }, lists, recordAspRoot: true });
  await store.close();
  return file;
}

interface TreeTimings {
  leaves: number;
  rebuildMs: number;
  /** createIndexer on a file nothing of whose trees is saved yet. */
  firstStartMs: number;
  /** createIndexer again on the same file: each run, and their median. */
  restartRunsMs: number[];
  restartMs: number;
  /** The first witness after the restart, which makes the tree's leaf index, then one of many. */
  firstWitnessMs: number;
  witnessMs: number;
  copyMs: number;
  /** The packed leaves of a trees answer: all of them the first time (the cache filled), then all again, then the last 10. */
  packFirstMs: number;
  packAllMs: number;
  packLast10Ms: number;
}

async function measureTree(chain: LocalChain, size: number): Promise<TreeTimings> {
  const leaves = benchLeaves(size);
  const rebuildMs = await elapsedMs(() => IndexedTree.build(leaves));

  const config = buildIndexerConfig(chain);
  const logger = pino({ level: "silent" });
  const lists = configuredScreeningLists(config, logger);
  await lists.load();
  const restartConfig = { ...config, dbPath: await storeOf(chain, leaves, lists) };

  const start = async () => {
    let indexer: Awaited<ReturnType<typeof createIndexer>> | undefined;
    const ms = await elapsedMs(async () => {
      indexer = await createIndexer(restartConfig, logger);
    });
    const status = indexer!.queries.status();
    if (status.leafCount !== size || status.aspLabelCount !== size || !status.aspRootMatches) throw new Error(`the restarted indexer does not hold the ${size} leaves and labels`);
    return { ms, indexer: indexer! };
  };
  const first = await start();
  await first.indexer.close();
  const restartRunsMs: number[] = [];
  let last = first.indexer;
  for (let i = 0; i < RESTARTS; i++) {
    const run = await start();
    restartRunsMs.push(run.ms);
    if (i < RESTARTS - 1) await run.indexer.close();
    last = run.indexer;
  }
  const tree = last.sync.stateTree;
  if (tree.root !== (await IndexedTree.build(leaves)).root) throw new Error("the restarted state tree has another root");

  const firstWitnessMs = await elapsedMs(() => tree.witness(leaves[size - 1]!));
  const witnessMs =
    (await elapsedMs(() => {
      for (let i = 0; i < WITNESSES; i++) tree.witness(leaves[(i * 7919) % size]!);
    })) / WITNESSES;
  const copyMs = await elapsedMs(() => tree.copy());
  const packFirstMs = await elapsedMs(() => tree.packedLeaves(0));
  // As the response is written: the JSON text encoded to bytes.
  const packAllMs = await elapsedMs(() => Buffer.from(`"${tree.packedLeaves(0)}"`));
  const packLast10Ms = await elapsedMs(() => Buffer.from(`"${tree.packedLeaves(size - 10)}"`));
  await last.close();
  return {
    leaves: size,
    rebuildMs,
    firstStartMs: first.ms,
    restartRunsMs,
    restartMs: percentile(restartRunsMs, 50),
    firstWitnessMs,
    witnessMs,
    copyMs,
    packFirstMs,
    packAllMs,
    packLast10Ms,
  };
}

const chain = await startLocalChain();
console.log(`cold sync of ${DEPOSITS.toLocaleString("en-US")} deposits over HTTP JSON-RPC...`);
const sync = await measureSyncRate(chain);
const trees: TreeTimings[] = [];
for (const size of TREE_SIZES) {
  console.log(`state tree and restart at ${size.toLocaleString("en-US")} leaves...`);
  trees.push(await measureTree(chain, size));
}
await chain.close();

const count = (n: number) => n.toLocaleString("en-US");
const rows: [string, string][] = [
  [`cold sync, ${count(sync.deposits)} deposits (${count(sync.events)} events, ${sync.blocks} blocks)`, `${sync.seconds.toFixed(2)} s`],
  ["cold sync rate", `${count(sync.eventsPerSecond)} events/s`],
  ...trees.flatMap((t): [string, string][] => [
    [`tree rebuild in memory, ${count(t.leaves)} leaves`, `${t.rebuildMs.toFixed(0)} ms`],
    [`RESTART (createIndexer on SQLite), ${count(t.leaves)} deposits: median of ${RESTARTS}`, `${t.restartMs.toFixed(0)} ms (${t.restartRunsMs.map((ms) => ms.toFixed(0)).join(", ")})`],
    [`first start of that file (nothing of its trees saved), ${count(t.leaves)} deposits`, `${t.firstStartMs.toFixed(0)} ms`],
    [`witness, ${count(t.leaves)} leaves: first after the restart / each next`, `${t.firstWitnessMs.toFixed(1)} / ${t.witnessMs.toFixed(3)} ms`],
    [`tree copy (ASP copy-on-write), ${count(t.leaves)} leaves`, `${t.copyMs.toFixed(0)} ms`],
    [
      `packed leaves of a trees answer, ${count(t.leaves)} leaves: first / every leaf / last 10`,
      `${t.packFirstMs.toFixed(1)} / ${t.packAllMs.toFixed(2)} / ${t.packLast10Ms.toFixed(2)} ms`,
    ],
  ]),
];
printTable(["measurement", "result"], rows);
await writeResults("indexer", {
  sync,
  trees: Object.fromEntries(
    trees.map((t) => [
      t.leaves,
      {
        rebuildMs: Math.round(t.rebuildMs),
        restartMs: Math.round(t.restartMs),
        restartRunsMs: t.restartRunsMs.map(Math.round),
        firstStartMs: Math.round(t.firstStartMs),
        firstWitnessMs: Number(t.firstWitnessMs.toFixed(1)),
        witnessMs: Number(t.witnessMs.toFixed(3)),
        copyMs: Math.round(t.copyMs),
        packFirstMs: Number(t.packFirstMs.toFixed(1)),
        packAllMs: Number(t.packAllMs.toFixed(2)),
        packLast10Ms: Number(t.packLast10Ms.toFixed(2)),
      },
    ]),
  ),
});

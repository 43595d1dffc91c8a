// npm run bench:indexer
//
// How fast the indexer syncs and rebuilds: the cold-sync rate of the real indexer over HTTP JSON-RPC against
// BENCH_DEPOSITS real deposits (default 1,000, one per block; making them takes most of the run), the state tree
// rebuild at 10k and 100k leaves (in memory, and from the SQLite store as a restart does), a witness, and the copy
// the ASP curator makes before changing a tree whose root is on chain. Prints a table and writes
// bench/results/indexer.json.
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { precommitmentOf } from "../../sdk/index.js";
import { SqliteIndexerStore } from "../../indexer/store/sqlite-store.js";
import { IndexedTree } from "../../indexer/trees.js";
import { buildIndexerConfig, startIndexer } from "../../test/indexer/helpers/indexer-harness.js";
import { startLocalChain } from "../../test/indexer/helpers/local-chain.js";
import { secretsFor } from "../../test/contracts/helpers/notes.js";
import { elapsedMs, printTable, writeResults } from "../report.js";

const DEPOSITS = Number(process.env.BENCH_DEPOSITS ?? 1_000);
const TREE_SIZES = [10_000, 100_000];
const WITNESSES = 100;

interface SyncRate {
  deposits: number;
  events: number;
  blocks: number;
  seconds: number;
  eventsPerSecond: number;
}

/** Cold sync of the real indexer over HTTP JSON-RPC, against `DEPOSITS` deposits. */
async function measureSyncRate(): Promise<SyncRate> {
  const chain = await startLocalChain();
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
  await chain.close();
  const events = 2 * DEPOSITS; // LeafInserted and Deposited per deposit
  return {
    deposits: DEPOSITS,
    events,
    blocks: (status.lastBlock ?? 0) - addressBook.startBlock + 1,
    seconds,
    eventsPerSecond: Math.round(events / seconds),
  };
}

interface TreeTimings {
  leaves: number;
  rebuildMs: number;
  loadAndRebuildMs: number;
  witnessMs: number;
  copyMs: number;
  /** The packed leaves of a trees answer: all of them the first time (the cache filled), then all again, then the last 10. */
  packFirstMs: number;
  packAllMs: number;
  packLast10Ms: number;
}

/**
 * Rebuild from leaves in memory, load from SQLite then rebuild (a restart: hashed natively when the native prover is
 * built), one witness, one copy, and the packed leaves a trees answer carries.
 */
async function measureTree(size: number): Promise<TreeTimings> {
  // Distinct field elements; what they are does not change the cost of hashing them.
  const leaves = Array.from({ length: size }, (_, i) => BigInt(i + 1) * 0x9e3779b97f4a7c15n);
  const rebuildMs = await elapsedMs(() => IndexedTree.build(leaves));

  const store = new SqliteIndexerStore(path.join(mkdtempSync(path.join(os.tmpdir(), "indexer-bench-")), "bench.sqlite"));
  const txHash = `0x${"00".repeat(32)}`;
  await store.applyBatch({
    cursor: { number: 1, hash: txHash },
    blocks: [],
    leaves: leaves.map((commitment, leafIndex) => ({ leafIndex, commitment, blockNumber: 1, txHash, logIndex: leafIndex })),
    deposits: [],
    spentNullifiers: [],
    aspRoots: [],
    aspDecisions: [],
  });
  let tree = IndexedTree.of([]);
  const loadAndRebuildMs = await elapsedMs(async () => {
    tree = await IndexedTree.build(await store.leaves());
  });
  await store.close();

  const witnessMs =
    (await elapsedMs(() => {
      for (let i = 0; i < WITNESSES; i++) tree.witness(leaves[(i * 7919) % size]!);
    })) / WITNESSES;
  const copyMs = await elapsedMs(() => tree.copy());
  const packFirstMs = await elapsedMs(() => tree.packedLeaves(0));
  // As the response is written: the JSON text encoded to bytes.
  const packAllMs = await elapsedMs(() => Buffer.from(`"${tree.packedLeaves(0)}"`));
  const packLast10Ms = await elapsedMs(() => Buffer.from(`"${tree.packedLeaves(size - 10)}"`));
  return { leaves: size, rebuildMs, loadAndRebuildMs, witnessMs, copyMs, packFirstMs, packAllMs, packLast10Ms };
}

console.log(`cold sync of ${DEPOSITS.toLocaleString("en-US")} deposits over HTTP JSON-RPC...`);
const sync = await measureSyncRate();
const trees: TreeTimings[] = [];
for (const size of TREE_SIZES) {
  console.log(`state tree of ${size.toLocaleString("en-US")} leaves...`);
  trees.push(await measureTree(size));
}

const rows: [string, string][] = [
  [`cold sync, ${sync.deposits.toLocaleString("en-US")} deposits (${sync.events.toLocaleString("en-US")} events, ${sync.blocks} blocks)`, `${sync.seconds.toFixed(2)} s`],
  ["cold sync rate", `${sync.eventsPerSecond.toLocaleString("en-US")} events/s`],
  ...trees.flatMap((t): [string, string][] => [
    [`tree rebuild in memory, ${t.leaves.toLocaleString("en-US")} leaves`, `${t.rebuildMs.toFixed(0)} ms`],
    [`tree load from SQLite + rebuild, ${t.leaves.toLocaleString("en-US")} leaves`, `${t.loadAndRebuildMs.toFixed(0)} ms`],
    [`witness, ${t.leaves.toLocaleString("en-US")} leaves`, `${t.witnessMs.toFixed(3)} ms`],
    [`tree copy (ASP copy-on-write), ${t.leaves.toLocaleString("en-US")} leaves`, `${t.copyMs.toFixed(0)} ms`],
    [
      `packed leaves of a trees answer, ${t.leaves.toLocaleString("en-US")} leaves: first / every leaf / last 10`,
      `${t.packFirstMs.toFixed(1)} / ${t.packAllMs.toFixed(2)} / ${t.packLast10Ms.toFixed(2)} ms`,
    ],
  ]),
];
printTable(["measurement", "result"], rows);
await writeResults("indexer", {
  sync,
  treeRebuild: Object.fromEntries(
    trees.map((t) => [
      t.leaves,
      {
        rebuildMs: Math.round(t.rebuildMs),
        loadAndRebuildMs: Math.round(t.loadAndRebuildMs),
        witnessMs: Number(t.witnessMs.toFixed(3)),
        copyMs: Math.round(t.copyMs),
        packFirstMs: Number(t.packFirstMs.toFixed(1)),
        packAllMs: Number(t.packAllMs.toFixed(2)),
        packLast10Ms: Number(t.packLast10Ms.toFixed(2)),
      },
    ]),
  ),
});

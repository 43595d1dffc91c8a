import { expect } from "chai";
import { DatabaseSync } from "node:sqlite";
import { CHUNK_LEAVES, createLeanIMT, hash1 } from "../../sdk/index.js";
import type { IndexerConfig } from "../../indexer/config.js";
import { SqliteIndexerStore } from "../../indexer/store/sqlite-store.js";
import type { TreeName } from "../../indexer/store/indexer-store.js";
import { addressOf, buildBatch, buildBlock, buildDecision, buildDeposit, buildLeaf } from "./helpers/builders.js";
import { buildIndexerConfig, rewriteScreeningList, startIndexer } from "./helpers/indexer-harness.js";
import { startLocalChain } from "./helpers/local-chain.js";

const chain = await startLocalChain();
const { chainId, privacyPool } = chain.facilitator.addressBook;

/** `count` deposits from leaf `first` on, in `block`: each a leaf and an approved label, by one of four depositors. */
function depositBatch(block: number, first: number, count: number, fork = 0) {
  const indexes = Array.from({ length: count }, (_, i) => first + i);
  const commitment = (i: number) => hash1(BigInt(1_000_000 * fork + i));
  const label = (i: number) => hash1(BigInt(1_000_000 * fork + i) + (1n << 64n));
  return buildBatch({
    cursor: buildBlock(block, fork),
    leaves: indexes.map((i) => buildLeaf({ leafIndex: i, commitment: commitment(i), blockNumber: block, logIndex: 2 * i })),
    deposits: indexes.map((i) => buildDeposit({ label: label(i), depositor: addressOf(i % 4), commitment: commitment(i), blockNumber: block, logIndex: 2 * i + 1 })),
    aspDecisions: indexes.map((i) => buildDecision({ label: label(i), depositor: addressOf(i % 4) })),
  });
}

describe("indexer restart from its store", function () {
  let config: IndexerConfig;
  const withStore = async <T>(work: (store: SqliteIndexerStore) => Promise<T>): Promise<T> => {
    const store = new SqliteIndexerStore(config.dbPath);
    try {
      return await work(store);
    } finally {
      await store.close();
    }
  };
  const savedChunks = (tree: TreeName) => withStore(async (store) => (await store.treeChunks(tree)).map((bytes) => Buffer.from(bytes).toString("hex")));
  /** The roots a cold build of the store's leaves and approved labels gives, beside those of a restarted indexer. */
  const restart = async (approved: (depositor: string) => boolean = () => true) => {
    const [leaves, deposits] = await withStore(async (store) => [await store.leaves(), await store.screenedDeposits()] as const);
    const labels = deposits.filter((deposit) => approved(deposit.depositor)).map((deposit) => deposit.label);
    const running = await startIndexer(config);
    const status = running.indexer.queries.status();
    await running.stop();
    expect({ leaves: status.leafCount, stateRoot: status.stateRoot, labels: status.aspLabelCount, aspRoot: status.aspRoot }).to.deep.equal({
      leaves: leaves.length,
      stateRoot: createLeanIMT(leaves).root,
      labels: labels.length,
      aspRoot: createLeanIMT(labels).root,
    });
  };

  beforeEach(async function () {
    config = buildIndexerConfig(chain);
    await withStore(async (store) => {
      await store.bindDeployment(`${chainId}:${privacyPool}`);
      await store.applyBatch(depositBatch(10, 0, CHUNK_LEAVES + 500));
      await store.applyBatch(depositBatch(20, CHUNK_LEAVES + 500, CHUNK_LEAVES));
    });
  });
  after(async function () {
    await chain.close();
  });

  it("saves its trees' complete chunks at the first start and has the roots of a cold build at every restart", async function () {
    await restart();
    const saved = { state: await savedChunks("state"), asp: await savedChunks("asp") };
    expect(saved.state).to.have.length(2);
    expect(saved.asp).to.have.length(2);
    await restart();
    expect({ state: await savedChunks("state"), asp: await savedChunks("asp") }).to.deep.equal(saved);
  });

  it("starts on a database made before its trees were saved (no tree_chunks table): creates the table and fills it", async function () {
    const db = new DatabaseSync(config.dbPath);
    db.exec("DROP TABLE tree_chunks");
    db.close();
    await restart();
    expect(await savedChunks("state")).to.have.length(2);
    expect(await savedChunks("asp")).to.have.length(2);
  });

  it("after a reorg that replaced leaves inside a saved chunk, hashes that chunk again and replaces it", async function () {
    await restart();
    const before = await savedChunks("state");
    await withStore(async (store) => {
      await store.rewindTo(buildBlock(10));
      await store.applyBatch(depositBatch(21, CHUNK_LEAVES + 500, CHUNK_LEAVES + 100, 1));
    });
    await restart();
    const after = await savedChunks("state");
    expect(after).to.have.length(2);
    expect(after[0]).to.equal(before[0]);
    expect(after[1]).to.not.equal(before[1]);
  });

  it("after a screening list excluded a depositor, builds the ASP tree without its labels and replaces the stale chunks", async function () {
    await restart();
    const before = await savedChunks("asp");
    rewriteScreeningList(config.sanctionsList, [addressOf(2)], "sanctioned since the last start");
    await restart((depositor) => depositor !== addressOf(2));
    const after = await savedChunks("asp");
    // A quarter of the labels left: one complete chunk is left, made again.
    expect(after).to.have.length(1);
    expect(after[0]).to.not.equal(before[0]);
  });

  it("hashes again a saved chunk that was damaged", async function () {
    await restart();
    const before = await savedChunks("state");
    await withStore(async (store) => {
      const [first, second] = await store.treeChunks("state");
      const damaged = Buffer.from(second!);
      damaged[damaged.length - 100]! ^= 1;
      await store.saveTreeChunks("state", 0, [first!, damaged]);
    });
    await restart();
    expect(await savedChunks("state")).to.deep.equal(before);
  });
});

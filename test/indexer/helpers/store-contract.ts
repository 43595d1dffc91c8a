import { expect } from "chai";
import type { IndexerStore } from "../../../indexer/store/indexer-store.js";
import {
  addressOf,
  buildBatch,
  buildBlock,
  buildDecision,
  buildDeposit,
  buildLeaf,
  buildSpend,
  fieldOf,
  txHashOf,
} from "./builders.js";

/** A fresh, empty database; every open() connects to the same data. */
export interface StoreDatabase {
  open(): Promise<IndexerStore>;
}

/**
 * The behaviour every IndexerStore backend must have. The SQLite store runs it; a PostgreSQL store runs the same
 * suite with its own factory.
 */
export function describeIndexerStore(backend: string, freshDatabase: () => Promise<StoreDatabase>): void {
  describe(`IndexerStore contract: ${backend}`, function () {
    const opened: IndexerStore[] = [];
    const open = async (database: StoreDatabase) => {
      const store = await database.open();
      opened.push(store);
      return store;
    };
    afterEach(async function () {
      await Promise.all(opened.splice(0).map((store) => store.close()));
    });

    it("starts without a cursor and keeps the last batch's cursor across reopening", async function () {
      const database = await freshDatabase();
      const store = await open(database);
      expect(await store.cursor()).to.equal(null);
      await store.applyBatch(buildBatch({ cursor: buildBlock(10) }));
      await store.applyBatch(buildBatch({ cursor: buildBlock(20) }));
      await store.close();
      opened.pop();

      expect(await (await open(database)).cursor()).to.deep.equal(buildBlock(20));
    });

    it("returns leaves by leaf index and deposits in chain order", async function () {
      const store = await open(await freshDatabase());
      await store.applyBatch(
        buildBatch({
          cursor: buildBlock(12),
          leaves: [buildLeaf({ leafIndex: 1, blockNumber: 12 }), buildLeaf({ leafIndex: 0, blockNumber: 11 })],
          deposits: [
            buildDeposit({ label: fieldOf(2), blockNumber: 12, logIndex: 0 }),
            buildDeposit({ label: fieldOf(1), blockNumber: 11, logIndex: 5 }),
          ],
        }),
      );
      expect(await store.leaves()).to.deep.equal([fieldOf(100), fieldOf(101)]);
      expect((await store.screenedDeposits()).map((d) => d.label)).to.deep.equal([fieldOf(1), fieldOf(2)]);
      expect(await store.deposit(fieldOf(2))).to.deep.equal(buildDeposit({ label: fieldOf(2), blockNumber: 12, logIndex: 0 }));
      expect(await store.deposit(fieldOf(3))).to.equal(null);
    });

    it("writes nothing of a batch that fails", async function () {
      const store = await open(await freshDatabase());
      await store.applyBatch(buildBatch({ cursor: buildBlock(10), leaves: [buildLeaf({ leafIndex: 0 })] }));
      const duplicateLeaf = buildBatch({
        cursor: buildBlock(11),
        leaves: [buildLeaf({ leafIndex: 1 }), buildLeaf({ leafIndex: 0 })],
      });
      await expectRejection(store.applyBatch(duplicateLeaf));
      expect(await store.cursor()).to.deep.equal(buildBlock(10));
      expect(await store.leaves()).to.have.length(1);
    });

    it("rewinds to a block: drops what came after it, with the ASP decisions of dropped deposits", async function () {
      const store = await open(await freshDatabase());
      const kept = fieldOf(1);
      const dropped = fieldOf(2);
      await store.applyBatch(
        buildBatch({
          cursor: buildBlock(10),
          leaves: [buildLeaf({ leafIndex: 0, blockNumber: 10 })],
          deposits: [buildDeposit({ label: kept, blockNumber: 10 })],
          aspDecisions: [buildDecision({ label: kept })],
        }),
      );
      await store.applyBatch(
        buildBatch({
          cursor: buildBlock(20),
          blocks: [buildBlock(15), buildBlock(20)],
          leaves: [buildLeaf({ leafIndex: 1, blockNumber: 15 })],
          deposits: [buildDeposit({ label: dropped, blockNumber: 15 })],
          spentNullifiers: [buildSpend({ blockNumber: 15 })],
          aspRoots: [{ root: fieldOf(9), cid: "sha256:00", timestamp: 1, blockNumber: 15, txHash: txHashOf(9), logIndex: 0 }],
          aspDecisions: [buildDecision({ label: dropped })],
        }),
      );

      await store.rewindTo(buildBlock(10));

      expect(await store.cursor()).to.deep.equal(buildBlock(10));
      expect(await store.leaves()).to.have.length(1);
      expect((await store.screenedDeposits()).map((d) => d.label)).to.deep.equal([kept]);
      expect(await store.aspAuditTrail(kept)).to.deep.equal([buildDecision({ label: kept })]);
      expect(await store.aspAuditTrail(dropped)).to.deep.equal([]);
      expect(await store.spentNullifier(buildSpend().nullifierHash)).to.equal(null);
      expect(await store.latestAspRoot()).to.equal(null);
      expect(await store.knownBlocks(100, 10)).to.deep.equal([buildBlock(10)]);
    });

    it("rewinds to nothing: drops everything and clears the cursor", async function () {
      const store = await open(await freshDatabase());
      await store.applyBatch(buildBatch({ cursor: buildBlock(10), leaves: [buildLeaf({ leafIndex: 0 })] }));
      await store.rewindTo(null);
      expect(await store.cursor()).to.equal(null);
      expect(await store.leaves()).to.deep.equal([]);
      expect(await store.knownBlocks(100, 10)).to.deep.equal([]);
    });

    it("lists remembered blocks newest first, at or below a bound", async function () {
      const store = await open(await freshDatabase());
      await store.applyBatch(buildBatch({ cursor: buildBlock(30), blocks: [buildBlock(5), buildBlock(17), buildBlock(30)] }));
      expect(await store.knownBlocks(20, 10)).to.deep.equal([buildBlock(17), buildBlock(5)]);
      expect(await store.knownBlocks(30, 1)).to.deep.equal([buildBlock(30)]);
    });

    it("keeps every ASP decision in the audit trail and gives each deposit the latest one on its label", async function () {
      const store = await open(await freshDatabase());
      const label = fieldOf(1);
      const excluded = buildDecision({ label, approved: false, list: "overlay", reason: "listed" });
      const unscreened = buildDeposit({ label: fieldOf(2), depositor: addressOf(2), value: 7n, logIndex: 2 });
      await store.applyBatch(
        buildBatch({ cursor: buildBlock(10), deposits: [buildDeposit({ label }), unscreened], aspDecisions: [buildDecision({ label })] }),
      );
      await store.appendAspDecisions([excluded]);

      expect(await store.screenedDeposits()).to.deep.equal([
        { label, depositor: addressOf(1), value: 1_000_000n, verdict: { approved: false, list: "overlay", reason: "listed" } },
        { label: fieldOf(2), depositor: addressOf(2), value: 7n, verdict: null },
      ]);
      expect(await store.aspAuditTrail(label)).to.deep.equal([buildDecision({ label }), excluded]);
    });

    it("finds spent nullifiers, ragequit labels and the latest ASP root", async function () {
      const store = await open(await freshDatabase());
      const withdrawal = buildSpend({ nullifierHash: fieldOf(1) });
      const ragequit = buildSpend({ nullifierHash: fieldOf(2), kind: "ragequit", label: fieldOf(3), logIndex: 3 });
      const root = (n: number, logIndex: number) => ({
        root: fieldOf(n),
        cid: `sha256:${n}`,
        timestamp: n,
        blockNumber: 10,
        txHash: txHashOf(n),
        logIndex,
      });
      await store.applyBatch(
        buildBatch({
          cursor: buildBlock(10),
          spentNullifiers: [withdrawal, ragequit],
          aspRoots: [root(7, 4), root(8, 5)],
        }),
      );
      expect(await store.spentNullifier(fieldOf(1))).to.deep.equal(withdrawal);
      expect(await store.spentNullifier(fieldOf(2))).to.deep.equal(ragequit);
      expect(await store.spentNullifier(fieldOf(4))).to.equal(null);
      expect(await store.ragequitLabels()).to.deep.equal([fieldOf(3)]);
      expect(await store.latestAspRoot()).to.deep.equal(root(8, 5));
    });

    it("keeps each tree's saved chunks in order, replaced from a given chunk on", async function () {
      const database = await freshDatabase();
      const store = await open(database);
      const chunk = (byte: number) => Uint8Array.from([byte, 0, 255, byte]);
      const hex = (chunks: Uint8Array[]) => chunks.map((bytes) => Buffer.from(bytes).toString("hex"));
      expect(await store.treeChunks("state")).to.deep.equal([]);
      await store.saveTreeChunks("state", 0, [chunk(1), chunk(2), chunk(3)]);
      await store.saveTreeChunks("asp", 0, [chunk(9)]);
      await store.saveTreeChunks("state", 1, [chunk(4)]);
      await store.close();
      opened.pop();

      const reopened = await open(database);
      expect(hex(await reopened.treeChunks("state"))).to.deep.equal(hex([chunk(1), chunk(4)]));
      expect(hex(await reopened.treeChunks("asp"))).to.deep.equal(hex([chunk(9)]));
      await reopened.saveTreeChunks("asp", 0, []);
      expect(await reopened.treeChunks("asp")).to.deep.equal([]);
    });

    it("belongs to one deployment and refuses another", async function () {
      const database = await freshDatabase();
      const store = await open(database);
      await store.bindDeployment(`31337:${addressOf(1)}`);
      await store.bindDeployment(`31337:${addressOf(1)}`);
      await expectRejection(store.bindDeployment(`84532:${addressOf(1)}`), /belongs to deployment 31337/);
    });
  });
}

async function expectRejection(promise: Promise<unknown>, message?: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "expected a rejection").to.be.instanceOf(Error);
  if (message !== undefined) expect((error as Error).message).to.match(message);
}

import { expect } from "chai";
import { PgIndexerStore } from "../../indexer/store/pg-store.js";
import { createTestSchema, type TestSchema } from "../helpers/database.js";
import { buildBatch, buildBlock, buildDeposit, fieldOf } from "./helpers/builders.js";
import { describeIndexerStore } from "./helpers/store-contract.js";

describe("PostgreSQL indexer store", function () {
  const schemas: TestSchema[] = [];
  const freshSchema = async () => {
    const schema = await createTestSchema();
    schemas.push(schema);
    return schema;
  };
  // Runs after the contract's own afterEach has closed its stores.
  afterEach(async function () {
    await Promise.all(schemas.splice(0).map((schema) => schema.drop()));
  });

  describeIndexerStore("PostgreSQL", async () => {
    const schema = await freshSchema();
    return { open: () => PgIndexerStore.open(schema) };
  });

  describe("PostgreSQL specifics", function () {
    it("creates its tables once when several processes start at once", async function () {
      const schema = await freshSchema();
      const stores = await Promise.all(Array.from({ length: 6 }, () => PgIndexerStore.open(schema)));
      try {
        await stores[0]!.applyBatch(buildBatch({ cursor: buildBlock(7) }));
        for (const store of stores) expect(await store.cursor()).to.deep.equal(buildBlock(7));
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    });

    it("round-trips the largest uint256 value and field elements exactly", async function () {
      const store = await PgIndexerStore.open(await freshSchema());
      try {
        const deposit = buildDeposit({ label: fieldOf(1), value: 2n ** 256n - 1n, precommitment: 2n ** 254n });
        await store.applyBatch(buildBatch({ cursor: buildBlock(10), deposits: [deposit] }));
        expect(await store.deposit(fieldOf(1))).to.deep.equal(deposit);
      } finally {
        await store.close();
      }
    });

    it("remembers a block listed twice in one batch with its last hash", async function () {
      const store = await PgIndexerStore.open(await freshSchema());
      try {
        await store.applyBatch(buildBatch({ cursor: buildBlock(10), blocks: [buildBlock(10, 1), buildBlock(10)] }));
        expect(await store.knownBlocks(10, 5)).to.deep.equal([buildBlock(10)]);
      } finally {
        await store.close();
      }
    });

    it("keeps two deployments apart in two schemas of one database", async function () {
      const [first, second] = await Promise.all([freshSchema(), freshSchema()]);
      const stores = await Promise.all([PgIndexerStore.open(first), PgIndexerStore.open(second)]);
      try {
        await stores[0].bindDeployment("31337:0xA");
        await stores[1].bindDeployment("84532:0xB");
        await stores[0].applyBatch(buildBatch({ cursor: buildBlock(10) }));
        expect(await stores[1].cursor()).to.equal(null);
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    });
  });
});

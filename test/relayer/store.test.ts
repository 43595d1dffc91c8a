import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PgRelayerStore } from "../../relayer/store/pg-store.js";
import { SqliteRelayerStore } from "../../relayer/store/sqlite-store.js";
import { createTestSchema, type TestSchema } from "../helpers/database.js";
import { describeRelayerStore } from "./helpers/store-contract.js";

describeRelayerStore("SQLite", async () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "relayer-store-")), "relayer.sqlite");
  return { open: async () => new SqliteRelayerStore(file) };
});

describe("PostgreSQL relayer store", function () {
  const schemas: TestSchema[] = [];
  // Runs after the contract's own afterEach has closed its stores.
  afterEach(async function () {
    await Promise.all(schemas.splice(0).map((schema) => schema.drop()));
  });

  describeRelayerStore("PostgreSQL", async () => {
    const schema = await createTestSchema();
    schemas.push(schema);
    return { open: () => PgRelayerStore.open(schema) };
  });
});

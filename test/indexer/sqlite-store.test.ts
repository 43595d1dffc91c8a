import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { SqliteIndexerStore } from "../../indexer/store/sqlite-store.js";
import { describeIndexerStore } from "./helpers/store-contract.js";

describeIndexerStore("SQLite", async () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "indexer-store-")), "indexer.sqlite");
  return { open: async () => new SqliteIndexerStore(file) };
});

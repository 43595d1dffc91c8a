import type { IndexerConfig } from "../config.js";
import type { IndexerStore } from "./indexer-store.js";
import { PgIndexerStore } from "./pg-store.js";
import { SqliteIndexerStore } from "./sqlite-store.js";

/** The indexer's store for its config: PostgreSQL when INDEXER_DATABASE_URL is set, else the SQLite file. */
export async function openIndexerStore(config: Pick<IndexerConfig, "databaseUrl" | "dbPath">): Promise<IndexerStore> {
  return config.databaseUrl === undefined
    ? new SqliteIndexerStore(config.dbPath)
    : PgIndexerStore.open({ connectionString: config.databaseUrl });
}

import type { RelayerConfig } from "../config.js";
import { PgRelayerStore } from "./pg-store.js";
import type { RelayerStore } from "./relayer-store.js";
import { SqliteRelayerStore } from "./sqlite-store.js";

/** Which backend holds the relayer's state, as `supported` reports it. */
export type StorageBackend = "sqlite" | "postgres";

/**
 * The relayer's store for its config: PostgreSQL when RELAYER_DATABASE_URL is set (several relayers may share
 * it), else the SQLite file of one relayer.
 */
export async function openRelayerStore(
  config: Pick<RelayerConfig, "databaseUrl" | "dbPath">,
): Promise<{ store: RelayerStore; backend: StorageBackend }> {
  return config.databaseUrl === undefined
    ? { store: new SqliteRelayerStore(config.dbPath), backend: "sqlite" }
    : { store: await PgRelayerStore.open({ connectionString: config.databaseUrl }), backend: "postgres" };
}

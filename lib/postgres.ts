import pg from "pg";
import { z } from "zod";

/** A PostgreSQL connection URL, as the services' `*_DATABASE_URL` variables take it. */
export const DatabaseUrlSchema = z.url({
  protocol: /^postgres(ql)?$/,
  error: "must be a postgres:// or postgresql:// URL",
});

/** Where a PostgreSQL store keeps its tables. */
export interface PostgresOptions {
  /** `postgres://` or `postgresql://` URL. */
  connectionString: string;
  /**
   * An existing schema to hold the tables instead of the connection's default search path (`public`): several
   * stores, or test runs, can then share one database without seeing each other's rows.
   */
  schema?: string;
}

/**
 * Limits per session: a statement running longer than `statementMs`, or waiting longer than `lockMs` for a row
 * another session holds, is cancelled with an error instead of hanging its caller; a connection not had within
 * `connectMs` fails.
 */
export interface PostgresTimeouts {
  statementMs: number;
  lockMs: number;
  connectMs: number;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * Connects to `options` and creates the store's tables when missing. `ddl` must be idempotent
 * (`CREATE ... IF NOT EXISTS`); it runs under a transaction-scoped advisory lock named `lockName`, because two
 * processes starting at once would otherwise race on the catalog and one would fail with a duplicate key.
 */
export async function openDatabase(
  options: PostgresOptions,
  lockName: string,
  ddl: string,
  timeouts?: PostgresTimeouts,
): Promise<pg.Pool> {
  const pool = openPool(options, timeouts);
  try {
    await inTransaction(pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [lockName]);
      await client.query(ddl);
    });
    return pool;
  } catch (error) {
    await pool.end();
    throw error;
  }
}

function openPool({ connectionString, schema }: PostgresOptions, timeouts: PostgresTimeouts | undefined): pg.Pool {
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new Error(`schema name ${JSON.stringify(schema)} must be a lower-case SQL identifier`);
  }
  const pool = new pg.Pool({
    connectionString,
    ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
    ...(timeouts === undefined
      ? {}
      : {
          statement_timeout: timeouts.statementMs,
          lock_timeout: timeouts.lockMs,
          connectionTimeoutMillis: timeouts.connectMs,
        }),
  });
  // A connection that dies while idle is dropped by the pool and replaced on the next query, which reports
  // any lasting outage itself; without a listener the pool's 'error' event would end the process.
  pool.on("error", () => {});
  return pool;
}

/** Runs `work` on one connection inside BEGIN ... COMMIT; any error rolls everything back and is rethrown. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    // The work's error is the one worth reporting; a connection that cannot even roll back is discarded.
    await client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    throw error;
  } finally {
    client.release(broken);
  }
}

import { randomBytes } from "node:crypto";
import pg from "pg";
import type { PostgresOptions } from "../../lib/postgres.js";

/**
 * The PostgreSQL the tests use: DATABASE_URL, else the one the project's machines and CI run at 127.0.0.1:5432
 * (trust auth; .ci/run sets DATABASE_URL to it).
 */
export function testDatabaseUrl(): string {
  return process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
}

/** A schema of its own for one test, so tests never see each other's rows. */
export interface TestSchema extends Required<PostgresOptions> {
  drop(): Promise<void>;
}

/**
 * Creates an empty schema with a random name in the test database. Fails, never skips, when the database cannot
 * be reached: a PostgreSQL backend that is not tested is not known to work.
 */
export async function createTestSchema(): Promise<TestSchema> {
  const connectionString = testDatabaseUrl();
  const schema = `t_${randomBytes(6).toString("hex")}`;
  await execute(connectionString, `CREATE SCHEMA ${schema}`);
  return { connectionString, schema, drop: () => execute(connectionString, `DROP SCHEMA ${schema} CASCADE`) };
}

async function execute(connectionString: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL at ${redactPassword(connectionString)} is unreachable (${(error as Error).message}): ` +
        "start it, or set DATABASE_URL to one that runs",
      { cause: error },
    );
  }
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function redactPassword(connectionString: string): string {
  const url = new URL(connectionString);
  if (url.password !== "") url.password = "***";
  return url.toString();
}

/** A database of its own in the test PostgreSQL, which a test can make refuse connections as a database that is down does. */
export interface RefusableDatabase {
  /** Its connection URL. */
  url: string;
  /** Refuses new connections (SQLSTATE 55000) and ends those open: every query of its clients fails from now on. */
  refuse(): Promise<void>;
  /** Accepts connections again. */
  accept(): Promise<void>;
  drop(): Promise<void>;
}

/** Creates an empty database named `<prefix>_<random>` (ALTER DATABASE needs a database, not a schema). */
export async function createRefusableDatabase(prefix: string): Promise<RefusableDatabase> {
  const admin = testDatabaseUrl();
  const name = `${prefix}_${randomBytes(5).toString("hex")}`;
  await execute(admin, `CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async refuse() {
      await execute(admin, `ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await execute(admin, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}'`);
    },
    accept: () => execute(admin, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`),
    drop: () => execute(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

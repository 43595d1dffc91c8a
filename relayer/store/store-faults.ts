import { RelayerError } from "../errors.js";

/**
 * What a store answers when its database cannot serve a query now (SQLite busy past its timeout, PostgreSQL
 * unreachable, a connection killed, a statement or lock timeout). Whether anything was spent is the caller's to
 * say: the leased withdrawals turn it into SETTLEMENT_UNCERTAIN once a relay may be on chain.
 */
export function storeUnavailable(): RelayerError {
  return new RelayerError(
    "STORE_UNAVAILABLE",
    "The relayer's database is unavailable; nothing was spent. Retry the same request shortly.",
    {},
    undefined,
    2,
  );
}

/** Socket-level failures: the query never reached the server or its connection went away. */
const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND"]);

/**
 * SQLSTATEs of a server that cannot serve the query now: connection exceptions (08), operator intervention
 * (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now), statement timeout or cancel (57014),
 * lock timeout (55P03), too many connections (53300), a database not accepting connections (55000: ALLOW_CONNECTIONS
 * false; the store's statements raise it for nothing else).
 */
const UNAVAILABLE_STATES = /^(08...|57P0[1-3]|57014|55P03|55000|53300)$/;

/** Messages of node-postgres for a connection that died or could not be had, which carry no code. */
const DROPPED_MESSAGES = /Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect/;

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * The connection was lost or refused before the statement could have run to completion: repeating an
 * idempotent query on a fresh connection is safe.
 */
export function isDroppedPgConnection(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== undefined && (NETWORK_CODES.has(code) || /^(08...|57P0[1-3])$/.test(code))) return true;
  return error instanceof Error && DROPPED_MESSAGES.test(error.message);
}

/** PostgreSQL cannot serve the query now (see UNAVAILABLE_STATES); anything else is a bug or a constraint. */
export function isPgUnavailable(error: unknown): boolean {
  const code = codeOf(error);
  return isDroppedPgConnection(error) || (code !== undefined && UNAVAILABLE_STATES.test(code));
}

/** SQLITE_BUSY (5) or SQLITE_LOCKED (6): another connection held the file past the busy timeout. */
export function isSqliteBusy(error: unknown): boolean {
  const errcode = (error as { errcode?: unknown } | undefined)?.errcode;
  return typeof errcode === "number" && (errcode & 0xff) >= 5 && (errcode & 0xff) <= 6;
}

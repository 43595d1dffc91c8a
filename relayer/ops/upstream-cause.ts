import { IndexerApiError } from "../../indexer/client.js";

/** An error's name, message and, for a failed fetch, the network cause (ECONNREFUSED): no URLs with tokens, no bodies. */
export function describeCause(error: unknown): string {
  if (error instanceof IndexerApiError) return `HTTP ${error.status} ${error.code}: ${error.message}`;
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const detail = typeof cause?.code === "string" ? cause.code : typeof cause?.message === "string" ? cause.message : undefined;
  return detail === undefined ? error.message : `${error.message} (${detail})`;
}

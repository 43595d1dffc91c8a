/**
 * Every failure the indexer API reports, with its HTTP status. The error middleware turns an IndexerError into
 * the one error body `{ error: { code, message } }`; anything else becomes INTERNAL without its details.
 */
export const INDEXER_ERROR_STATUS = {
  /** Path or query parameter that does not parse (e.g. a commitment that is not a field element). */
  INVALID_REQUEST: 400,
  /** Missing or wrong bearer token. */
  UNAUTHORIZED: 401,
  /** No such route. */
  ROUTE_NOT_FOUND: 404,
  /** The commitment is not a leaf of the state tree, or no deposit has the label. */
  DEPOSIT_NOT_FOUND: 404,
  /** The ASP curator excluded the label; its depositor can ragequit. */
  LABEL_NOT_APPROVED: 404,
  /** The label is approved but the ASP root that contains it is not on chain yet. */
  ASP_ROOT_NOT_PUBLISHED: 503,
  /** The indexer has not caught up with the chain since it started. */
  INDEXER_COLD: 503,
  /** The indexer's database does not answer: nullifier and deposit lookups cannot be served. */
  STORE_UNAVAILABLE: 503,
  INTERNAL: 500,
} as const;

export type IndexerErrorCode = keyof typeof INDEXER_ERROR_STATUS;

export class IndexerError extends Error {
  readonly status: number;

  constructor(
    readonly code: IndexerErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "IndexerError";
    this.status = INDEXER_ERROR_STATUS[code];
  }
}

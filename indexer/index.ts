// What other processes import from the indexer: the typed HTTP client and the API's schemas and error codes.
export * from "./api.js";
export { IndexerApiError, IndexerClient, type IndexerClientOptions } from "./client.js";
export { INDEXER_ERROR_STATUS, type IndexerErrorCode } from "./errors.js";

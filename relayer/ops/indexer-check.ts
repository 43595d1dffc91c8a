import { IndexerApiError, type IndexerClient } from "../../indexer/client.js";
import type { AddressBook } from "../../lib/address-book.js";
import { ConfigError } from "../../lib/env-config.js";
import { RELAYER_ENV } from "../config.js";
import { describeCause } from "./upstream-cause.js";

/** The parts of an address book that must agree for the relayer and the indexer to serve the same pool. */
const SAME_DEPLOYMENT = ["chainId", "entrypoint", "privacyPool", "usdc", "scope"] as const;

/**
 * Checks at start that the indexer at INDEXER_URL answers, accepts INDEXER_TOKEN and follows the deployment of
 * the relayer's address book. Throws a ConfigError naming the variable to fix: started anyway, the relayer would
 * answer every verify and settle with INDEXER_UNAVAILABLE and nothing would say why.
 */
export async function checkIndexer(indexer: IndexerClient, indexerUrl: string, book: AddressBook): Promise<void> {
  const deployment = await indexer.deployment().catch((error: unknown) => {
    if (error instanceof IndexerApiError && error.status === 401) {
      throw new ConfigError([`Invalid server config: ${RELAYER_ENV.indexerToken} is not accepted by the indexer at ${indexerUrl} (${describeCause(error)}); set the indexer's INDEXER_TOKEN`]);
    }
    throw new ConfigError([`Invalid server config: ${RELAYER_ENV.indexerUrl} ${indexerUrl} does not answer the indexer API (${describeCause(error)}); start the indexer or fix the URL`]);
  });
  const differing = SAME_DEPLOYMENT.filter((field) => String(deployment[field]).toLowerCase() !== String(book[field]).toLowerCase());
  if (differing.length > 0) {
    throw new ConfigError([
      `Invalid server config: ${RELAYER_ENV.addressBook} and the indexer at ${RELAYER_ENV.indexerUrl} follow different deployments ` +
        `(${differing.map((field) => `${field}: relayer ${book[field]}, indexer ${deployment[field]}`).join("; ")})`,
    ]);
  }
}

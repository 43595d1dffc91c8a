import { readFile } from "node:fs/promises";
import { JsonRpcProvider, Wallet } from "ethers";
import type Koa from "koa";
import type { Logger } from "pino";
import { AddressBookSchema, readAddressBook, type AddressBook } from "../lib/address-book.js";
import { Entrypoint__factory, IEntrypoint__factory, IPrivacyPool__factory } from "../types/ethers-contracts/index.js";
import { AspCurator } from "./asp/curator.js";
import { PostmanFunds } from "./asp/postman-funds.js";
import { RootPublisher } from "./asp/root-publisher.js";
import { configuredScreeningLists } from "./asp/screening-lists.js";
import { ChainReader } from "./chain/chain-reader.js";
import { ConfigError } from "../lib/env-config.js";
import { confirmationsFor, INDEXER_ENV, type IndexerConfig } from "./config.js";
import { createIndexerApp } from "./http/app.js";
import { IndexerMetrics } from "./metrics.js";
import { IndexerQueries } from "./queries.js";
import { IndexerReadiness } from "./readiness.js";
import type { IndexerStore } from "./store/indexer-store.js";
import { openIndexerStore } from "./store/open-store.js";
import { IndexerSync } from "./sync.js";

/** An indexer wired from its config, its state loaded from the store; nothing runs until asked. */
export interface Indexer {
  chainId: number;
  addressBook: AddressBook;
  store: IndexerStore;
  sync: IndexerSync;
  curator: AspCurator;
  queries: IndexerQueries;
  metrics: IndexerMetrics;
  readiness: IndexerReadiness;
  app: Koa;
  close(): Promise<void>;
}

const RPC_BACKOFF = { baseDelayMs: 500, maxDelayMs: 30_000 };

export async function createIndexer(config: IndexerConfig, logger: Logger): Promise<Indexer> {
  // No response cache: ethers shares identical requests for 250 ms, which would hide a reorg from the block-hash
  // checks made before and after reading a range.
  const provider = new JsonRpcProvider(config.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  const chainId = Number((await provider.getNetwork()).chainId);
  const addressBook = await loadAddressBook(config, chainId);
  const addresses = { pool: addressBook.privacyPool, entrypoint: addressBook.entrypoint };

  const metrics = new IndexerMetrics();
  const store = await openIndexerStore(config);
  await store.bindDeployment(`${chainId}:${addressBook.privacyPool}`);
  const lists = configuredScreeningLists(config, logger);
  await lists.load();

  const chain = new ChainReader(
    provider,
    {
      pool: IPrivacyPool__factory.connect(addresses.pool, provider),
      entrypoint: IEntrypoint__factory.connect(addresses.entrypoint, provider),
    },
    addresses,
    { retries: config.rpcRetries, ...RPC_BACKOFF },
    logger,
  );
  const postman =
    config.publishRoots && config.postmanPrivateKey !== undefined
      ? new PostmanFunds(new Wallet(config.postmanPrivateKey, provider), config.postmanLowBalanceEth, metrics, logger)
      : null;
  const curator = new AspCurator({
    store,
    lists,
    chain,
    publisher: postman === null ? null : await postmanPublisher(config.postmanPrivateKey!, addresses.entrypoint, provider, postman),
    policy: { minimumDeposit: config.minimumDeposit, operatorAddresses: config.operatorAddresses },
    logger,
  });
  const sync = new IndexerSync({
    chain,
    store,
    curator,
    logger,
    options: {
      startBlock: addressBook.startBlock,
      confirmations: confirmationsFor(config, chainId),
      maxBlockRange: config.maxBlockRange,
    },
  });
  await sync.load();
  const queries = new IndexerQueries({ chainId, sync, curator, store });
  const readiness = new IndexerReadiness({ store, provider, sync, curator, postman, metrics });
  const app = createIndexerApp({ queries, token: config.token, logger, addressBook, readiness, metrics, metricsApart: config.metricsPort !== undefined });

  return {
    chainId,
    addressBook,
    store,
    sync,
    curator,
    queries,
    metrics,
    readiness,
    app,
    async close() {
      provider.destroy();
      await store.close();
    },
  };
}

async function loadAddressBook(config: IndexerConfig, chainId: number): Promise<AddressBook> {
  const book =
    config.addressBook === undefined
      ? await readAddressBook(chainId)
      : AddressBookSchema.parse(JSON.parse(await readFile(config.addressBook, "utf8")));
  if (book === undefined) {
    throw new ConfigError([
      `Missing server config: ${INDEXER_ENV.addressBook} (no deployments/${chainId}.json for the RPC's chain ${chainId})`,
    ]);
  }
  if (book.chainId !== chainId) {
    throw new ConfigError([
      `Invalid server config: ${INDEXER_ENV.addressBook} is for chain ${book.chainId}, the RPC serves chain ${chainId}`,
    ]);
  }
  return book;
}

/** The publisher for the postman key; refuses a key without POSTMAN_ROLE rather than failing at each publish. */
async function postmanPublisher(privateKey: string, entrypoint: string, provider: JsonRpcProvider, funds: PostmanFunds): Promise<RootPublisher> {
  const postman = new Wallet(privateKey, provider);
  const contract = Entrypoint__factory.connect(entrypoint, postman);
  if (!(await contract.hasRole(await contract.POSTMAN_ROLE(), postman.address))) {
    throw new ConfigError([
      `Invalid server config: ${INDEXER_ENV.postmanPrivateKey} (${postman.address}) does not hold POSTMAN_ROLE on the entrypoint`,
    ]);
  }
  return new RootPublisher(contract, funds);
}

import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { IndexerClient } from "../../../indexer/client.js";
import { IndexerConfigSchema, type IndexerConfig, type IndexerConfigInput } from "../../../indexer/config.js";
import { createIndexer, type Indexer } from "../../../indexer/indexer.js";
import type { LocalChain } from "./local-chain.js";

export const TEST_TOKEN = "indexer-test-token-0123456789";

export interface ScreeningFiles {
  sanctionsList: string;
  overlayList: string;
}

/** Screening list files listing `sanctions` and `overlay` addresses, each with a comment saying why. */
export function writeScreeningLists(lists: { sanctions?: string[]; overlay?: string[] } = {}): ScreeningFiles {
  const dir = mkdtempSync(path.join(tmpdir(), "screening-"));
  const files = { sanctionsList: path.join(dir, "sanctions.txt"), overlayList: path.join(dir, "overlay.txt") };
  rewriteScreeningList(files.sanctionsList, lists.sanctions ?? [], "test sanctions entry");
  rewriteScreeningList(files.overlayList, lists.overlay ?? [], "test overlay entry");
  return files;
}

export function rewriteScreeningList(file: string, addresses: string[], note: string): void {
  writeFileSync(file, ["# test list", ...addresses.map((address) => `${address} # ${note}`)].join("\n"));
}

/** An indexer config for `chain`: fresh database, empty screening lists, no confirmations; any key overridden. */
export function buildIndexerConfig(chain: LocalChain, overrides: Partial<IndexerConfigInput> = {}): IndexerConfig {
  return IndexerConfigSchema.parse({
    rpcUrl: chain.rpc.url,
    token: TEST_TOKEN,
    addressBook: chain.addressBookFile,
    dbPath: path.join(mkdtempSync(path.join(tmpdir(), "indexer-db-")), "indexer.sqlite"),
    confirmations: "0",
    rpcRetries: "3",
    postmanPrivateKey: chain.postmanPrivateKey,
    logLevel: "silent",
    ...writeScreeningLists(),
    ...overrides,
  });
}

export interface RunningIndexer {
  indexer: Indexer;
  client: IndexerClient;
  url: string;
  /** Stops the HTTP server and closes the indexer (its database stays for a restart). */
  stop(): Promise<void>;
}

/** The real indexer in this process, its API on a free port; nothing synced yet. */
export async function startIndexer(config: IndexerConfig): Promise<RunningIndexer> {
  const indexer = await createIndexer(config, pino({ level: config.logLevel }));
  const server = http.createServer(indexer.app.callback()).listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    indexer,
    client: new IndexerClient({ baseUrl: url, token: config.token }),
    url,
    async stop() {
      server.closeAllConnections();
      server.close();
      await indexer.close();
    },
  };
}

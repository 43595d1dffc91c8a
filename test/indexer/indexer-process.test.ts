import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { IndexerClient } from "../../indexer/client.js";
import { toWireJson, type IndexerStatus } from "../../indexer/api.js";
import { rootOfWitness } from "../../sdk/index.js";
import { TEST_TOKEN, writeScreeningLists } from "./helpers/indexer-harness.js";
import { spawnService, type ServiceProcess } from "../helpers/service-process.js";
import { startLocalChain } from "./helpers/local-chain.js";
import { deposit } from "./helpers/pool-actions.js";

const chain = await startLocalChain();
const { privacyPool, entrypoint } = chain.facilitator;
const { alice, bob } = chain.depositors;

/** The environment an operator sets for the local chain: a fresh database, any free port. */
function buildEnv(overrides: Record<string, string> = {}): Record<string, string> {
  const lists = writeScreeningLists();
  return {
    INDEXER_RPC_URL: chain.rpc.url,
    INDEXER_TOKEN: TEST_TOKEN,
    INDEXER_ADDRESS_BOOK: chain.addressBookFile,
    INDEXER_DB_PATH: path.join(mkdtempSync(path.join(tmpdir(), "indexer-process-")), "indexer.sqlite"),
    INDEXER_PORT: "0",
    INDEXER_POLL_INTERVAL_MS: "200",
    ASP_POSTMAN_PRIVATE_KEY: chain.postmanPrivateKey,
    ASP_SANCTIONS_LIST: lists.sanctionsList,
    ASP_OVERLAY_LIST: lists.overlayList,
    ...overrides,
  };
}

async function waitForStatus(client: IndexerClient, done: (status: IndexerStatus) => boolean): Promise<IndexerStatus> {
  for (let attempt = 0; attempt < 150; attempt++) {
    const status = await client.status();
    if (done(status)) return status;
    await sleep(200);
  }
  throw new Error(`indexer status never reached the expected state: ${toWireJson(await client.status())}`);
}

describe("indexer process", function () {
  let child: ServiceProcess | undefined;

  beforeEach(async function () {
    await chain.reset();
  });
  afterEach(async function () {
    await child?.stop();
    child = undefined;
  });
  after(async function () {
    await chain.close();
  });

  it("follows a node over HTTP JSON-RPC, publishes the ASP root and answers its API until stopped", async function () {
    const note = await deposit(chain, alice, 1);
    child = spawnService("indexer/main.ts", [], buildEnv());
    const { port } = await child.logLine("indexer API listening");
    const client = new IndexerClient({ baseUrl: `http://127.0.0.1:${port}`, token: TEST_TOKEN });

    await waitForStatus(client, (status) => status.synced && status.aspRootMatches);
    expect(await entrypoint.latestRoot()).to.equal((await client.status()).aspRoot);
    const { witness } = await client.stateProof(note.commitment);
    expect(rootOfWitness(note.commitment, witness)).to.equal(await privacyPool.currentRoot());

    await deposit(chain, bob, 2);
    const followed = await waitForStatus(client, (status) => status.leafCount === 2 && status.aspLabelCount === 2);
    expect(followed.stateRoot).to.equal(await privacyPool.currentRoot());
    const wrongToken = await fetch(`http://127.0.0.1:${port}/v1/status`, { headers: { authorization: "Bearer nope" } });
    expect(wrongToken.status).to.equal(401);

    expect(await child.stop()).to.equal(0);
    await child.logLine("indexer stopped");
  });

  it("catches up once and exits with the sync command", async function () {
    await deposit(chain, alice, 1);
    child = spawnService("indexer/main.ts", ["sync"], buildEnv());
    expect(await child.exited).to.equal(0);
    expect(await child.logLine("sync done")).to.deep.include({ synced: true, leafCount: 1, aspRootMatches: true });
  });

  it("refuses to start without a token, naming the variable", async function () {
    const env = buildEnv();
    delete env.INDEXER_TOKEN;
    child = spawnService("indexer/main.ts", [], env);
    expect(await child.exited).to.equal(1);
    expect(child.lines).to.include("Missing server config: INDEXER_TOKEN");
  });
});

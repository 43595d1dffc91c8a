import { expect } from "chai";
import { hash1, nullifierHashOf, rootOfWitness } from "../../sdk/index.js";
import { ErrorBodySchema } from "../../indexer/api.js";
import { expectApiError } from "./helpers/api-errors.js";
import type { IndexerConfig } from "../../indexer/config.js";
import { StateRootMismatch } from "../../indexer/sync.js";
import { buildIndexerConfig, startIndexer, TEST_TOKEN, type RunningIndexer } from "./helpers/indexer-harness.js";
import { startLocalChain } from "./helpers/local-chain.js";
import { deposit, relayWithdrawal } from "./helpers/pool-actions.js";

const chain = await startLocalChain();
const { privacyPool } = chain.facilitator;
const { alice, bob, carol } = chain.depositors;
const { networkHelpers } = chain.connection;

describe("indexer sync on a local chain", function () {
  let running: RunningIndexer[] = [];
  const start = async (config: IndexerConfig = buildIndexerConfig(chain)) => {
    const indexer = await startIndexer(config);
    running.push(indexer);
    return indexer;
  };
  const stop = async (indexer: RunningIndexer) => {
    running = running.filter((other) => other !== indexer);
    await indexer.stop();
  };
  const getLogsRanges = () =>
    chain.rpc.requests
      .filter((request) => request.method === "eth_getLogs")
      .map((request) => {
        const [{ fromBlock, toBlock }] = request.params as [{ fromBlock: string; toBlock: string }];
        return [Number(fromBlock), Number(toBlock)];
      });

  beforeEach(async function () {
    await chain.reset();
  });
  afterEach(async function () {
    await Promise.all(running.map((indexer) => indexer.stop()));
    running = [];
  });
  after(async function () {
    await chain.close();
  });

  it("is cold until its first sync, then serves proofs under the pool's root", async function () {
    const note = await deposit(chain, alice, 1);
    const { indexer, client } = await start();

    expect(await client.status()).to.deep.include({ synced: false, leafCount: 0, lastBlock: null });
    const cold = await expectApiError(client.stateProof(note.commitment), 503, "INDEXER_COLD");
    expect(cold.message).to.match(/^indexer is cold, run a sync/);
    await expectApiError(client.nullifier(nullifierHashOf(note.nullifier)), 503, "INDEXER_COLD");

    await indexer.sync.catchUp();
    const status = await client.status();
    expect(status).to.deep.include({ synced: true, leafCount: 1, stateRootMatches: true });
    expect(status.stateRoot).to.equal(await privacyPool.currentRoot());
    const { witness, stateTreeSize } = await client.stateProof(note.commitment);
    expect(rootOfWitness(note.commitment, witness)).to.equal(await privacyPool.currentRoot());
    expect(BigInt(stateTreeSize), "the size a relay names for the witness' root").to.equal(await privacyPool.stateTreeSizeAt(witness.root));

    const unknown = await expectApiError(client.stateProof(hash1(404n)), 404, "DEPOSIT_NOT_FOUND");
    expect(unknown.message).to.contain("is not in the state tree");
  });

  it("answers 401 to a request without the bearer token or with a wrong one", async function () {
    const { url } = await start();
    const attempts: Record<string, string>[] = [{}, { authorization: "Bearer wrong-token" }, { authorization: TEST_TOKEN }];
    for (const headers of attempts) {
      const response = await fetch(`${url}/v1/status`, { headers });
      expect(response.status).to.equal(401);
      expect(response.headers.get("www-authenticate")).to.match(/^Bearer/);
      expect(ErrorBodySchema.parse(await response.json()).error.code).to.equal("UNAUTHORIZED");
    }
  });

  it("answers malformed parameters, unknown labels and unknown routes with the one error body", async function () {
    const { indexer, client, url } = await start();
    await indexer.sync.catchUp();
    const get = async (route: string) => {
      const response = await fetch(`${url}${route}`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
      return { status: response.status, body: ErrorBodySchema.parse(await response.json()) };
    };
    const malformed = await get("/v1/state/proofs/0x12");
    expect(malformed.status).to.equal(400);
    expect(malformed.body.error).to.deep.include({ code: "INVALID_REQUEST" });
    expect(malformed.body.error.message).to.match(/^commitment must be a canonical decimal/);
    expect((await get("/v1/nowhere")).body.error.code).to.equal("ROUTE_NOT_FOUND");
    await expectApiError(client.deposit(hash1(7n)), 404, "DEPOSIT_NOT_FOUND");
    await expectApiError(client.aspProof(hash1(7n)), 404, "DEPOSIT_NOT_FOUND");
  });

  it("keeps the pool's root through deposits and relayed withdrawals proven with its own paths", async function () {
    const notes = [
      await deposit(chain, alice, 1, 5_000_000n),
      await deposit(chain, bob, 2, 3_000_000n),
      await deposit(chain, carol, 3),
      await deposit(chain, alice, 4),
    ];
    const { indexer, client } = await start();
    await indexer.sync.catchUp();
    await indexer.curator.publish();

    const change = await relayWithdrawal(chain, client, notes[0]!, 2_000_000n);
    await indexer.sync.catchUp();
    await relayWithdrawal(chain, client, change, 1_000_000n);
    await indexer.sync.catchUp();

    const status = await client.status();
    expect(status).to.deep.include({ leafCount: 6, stateRootMatches: true });
    expect(status.stateRoot).to.equal(await privacyPool.currentRoot());
    const spent = await client.nullifier(nullifierHashOf(notes[0]!.nullifier));
    expect(spent).to.deep.include({ spent: true, asOfBlock: status.lastBlock });
    expect(spent.spend?.kind).to.equal("withdrawal");
    expect(await client.nullifier(nullifierHashOf(notes[1]!.nullifier))).to.deep.include({ spent: false, spend: null });
  });

  it("resumes from its stored cursor after a restart instead of reading from the deployment block", async function () {
    await deposit(chain, alice, 1);
    await deposit(chain, bob, 2);
    const config = buildIndexerConfig(chain);
    const first = await start(config);
    await first.indexer.sync.catchUp();
    const cursor = first.indexer.sync.lastBlock!;
    await stop(first);

    await deposit(chain, carol, 3);
    chain.rpc.requests.length = 0;
    const { indexer, client } = await start(config);
    expect(await client.status()).to.deep.include({ lastBlock: cursor, leafCount: 2 });
    await indexer.sync.catchUp();

    expect(getLogsRanges()[0]?.[0]).to.equal(cursor + 1);
    const status = await client.status();
    expect(status).to.deep.include({ leafCount: 3, stateRootMatches: true });
    expect(status.stateRoot).to.equal(await privacyPool.currentRoot());
  });

  it("reads the chain in bounded block ranges from the deployment block", async function () {
    await deposit(chain, alice, 1);
    await deposit(chain, bob, 2);
    const { indexer, client } = await start(buildIndexerConfig(chain, { maxBlockRange: "4" }));
    await indexer.sync.catchUp();

    const ranges = getLogsRanges();
    expect(ranges.length).to.be.greaterThan(2);
    expect(ranges[0]?.[0]).to.equal(chain.facilitator.addressBook.startBlock);
    ranges.forEach(([from, to], i) => {
      expect(to! - from! + 1).to.be.at.most(4);
      if (i > 0) expect(from).to.equal(ranges[i - 1]![1]! + 1);
    });
    expect(ranges.at(-1)?.[1]).to.equal(await chain.connection.ethers.provider.getBlockNumber());
    expect(await client.status()).to.deep.include({ leafCount: 2, stateRootMatches: true });
  });

  for (const replacement of ["shorter", "longer"] as const) {
    it(`drops and reads again the blocks a reorg replaced with a ${replacement} chain`, async function () {
      await deposit(chain, alice, 1);
      const fork = await networkHelpers.takeSnapshot();
      const dropped = [await deposit(chain, bob, 2), await deposit(chain, bob, 3)];
      const { indexer, client } = await start();
      await indexer.sync.catchUp();
      expect((await client.status()).leafCount).to.equal(3);

      await fork.restore();
      const replacing = await deposit(chain, carol, 4, 2_000_000n);
      if (replacement === "longer") await networkHelpers.mine(10);
      await indexer.sync.catchUp();

      const status = await client.status();
      expect(status).to.deep.include({ leafCount: 2, stateRootMatches: true });
      expect(status.stateRoot).to.equal(await privacyPool.currentRoot());
      await expectApiError(client.stateProof(dropped[0]!.commitment), 404, "DEPOSIT_NOT_FOUND");
      expect((await client.stateProof(replacing.commitment)).witness.index).to.equal(1);
      // The pool numbers labels by deposit, so the replacing deposit has the dropped one's label.
      expect(await client.deposit(replacing.label)).to.deep.include({ depositor: carol.address, value: 2_000_000n });
    });
  }

  it("waits for the configured confirmations before reading a block", async function () {
    const { indexer, client } = await start(buildIndexerConfig(chain, { confirmations: "2" }));
    await deposit(chain, alice, 1);
    await indexer.sync.catchUp();
    const head = await chain.connection.ethers.provider.getBlockNumber();
    expect(await client.status()).to.deep.include({ leafCount: 0, lastBlock: head - 2, confirmations: 2 });

    await networkHelpers.mine(2);
    await indexer.sync.catchUp();
    expect(await client.status()).to.deep.include({ leafCount: 1, lastBlock: head, stateRootMatches: true });
  });

  it("stores nothing of a batch whose rebuilt root is not the pool's, and recovers once the node answers right", async function () {
    await deposit(chain, alice, 1);
    await deposit(chain, bob, 2);
    const lastBlock = await chain.connection.ethers.provider.getBlockNumber();
    const { indexer, client } = await start();
    chain.rpc.tamper("eth_getLogs", (logs) => (logs as { blockNumber: string }[]).filter((log) => Number(log.blockNumber) !== lastBlock));

    const error = await indexer.sync.catchUp().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(StateRootMismatch);
    expect(await client.status()).to.deep.include({ lastBlock: null, leafCount: 0, stateRootMatches: false, synced: false });

    chain.rpc.tamper("eth_getLogs", undefined);
    await indexer.sync.catchUp();
    expect(await client.status()).to.deep.include({ leafCount: 2, stateRootMatches: true, synced: true });
  });

  it("retries a failing RPC with backoff", async function () {
    await deposit(chain, alice, 1);
    const { indexer, client } = await start();
    chain.rpc.failNext(2);
    await indexer.sync.catchUp();
    expect(await client.status()).to.deep.include({ leafCount: 1, stateRootMatches: true });
  });
});

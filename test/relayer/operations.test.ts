import { expect } from "chai";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { createRefusableDatabase, type RefusableDatabase } from "../helpers/database.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { Wallet } from "ethers";
import { buildIndexerConfig, startIndexer, TEST_TOKEN, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { manualMining } from "./helpers/manual-mining.js";
import { buildRelayerConfig, relayerKey, serviceDeposit, startRelayer, type RunningRelayer } from "./helpers/relayer-harness.js";
import { startSwitchableRpc, type SwitchableRpc } from "./helpers/switchable-rpc.js";
import { sample } from "../helpers/metrics.js";
import { hasPromtool, promtool } from "../helpers/promtool.js";

const payee = "0x000000000000000000000000000000000000bEEF";
const SETTLE = "/api/facilitator/settle";
const METRICS_TOKEN = "metrics-token-of-the-operations-test";
/** A passing readiness report is reused for a second; a change of state shows after it. */
const READINESS_REUSE_MS = 1_100;

describe("relayer operations: health, metrics, balance guard and fault answers", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let indexerProxy: TcpProxy;
  let databaseProxy: TcpProxy;
  let rpc: SwitchableRpc;
  let relayer: RunningRelayer;
  /** The relayer's database, of its own: the test refuses connections to it. */
  let database: RefusableDatabase;
  let tag = 601;

  const freshNote = async (): Promise<Note> => {
    const note = await deposit(chain, chain.depositors.alice, tag++, 3_000_000n);
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    return note;
  };
  const settleRequest = (note: Note) => ({ paymentDetails: { payTo: payee, maxAmountRequired: "1000000" }, serviceDeposit: serviceDeposit(note) });
  const scrape = async () => {
    const response = await fetch(`${relayer.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(response.status).to.equal(200);
    return response.text();
  };
  /** The indexer's metrics, behind its own token on its API port. */
  const scrapeIndexer = async () => {
    const response = await fetch(`${indexer.url}/metrics`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(response.status).to.equal(200);
    return response.text();
  };
  /** Fails when promtool is installed and rejects the exposition; passes where it is not installed. */
  const promtoolCheck = (exposition: string) => {
    if (hasPromtool()) promtool(["check", "metrics"], exposition);
  };
  const ready = async () => {
    const response = await fetch(`${relayer.url}/health/ready`);
    return { status: response.status, body: (await response.json()) as { ready: boolean; checks: Record<string, { ok: boolean; detail: string }> } };
  };
  const waitForReadiness = async (expected: boolean) => {
    for (let tries = 0; (await ready()).body.ready !== expected; tries++) {
      if (tries > 50) throw new Error(`readiness did not become ${expected}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  before(async function () {
    chain = await startLocalChain();
    indexer = await startIndexer(buildIndexerConfig(chain));
    await indexer.indexer.sync.catchUp();
    indexerProxy = await startTcpProxy(indexer.url);
    rpc = await startSwitchableRpc(chain.rpc.url);
    database = await createRefusableDatabase("t_ops");
    const databaseUrl = new URL(database.url);
    databaseProxy = await startTcpProxy(`http://${databaseUrl.hostname}:${databaseUrl.port || 5432}`);
    databaseUrl.host = new URL(databaseProxy.url).host;
    relayer = await startRelayer(
      buildRelayerConfig(chain, { ...indexer, url: indexerProxy.url }, {
        rpcUrl: rpc.url,
        rpcTimeoutMs: "1000",
        databaseUrl: databaseUrl.toString(),
        metricsToken: METRICS_TOKEN,
        relayInclusionTimeoutMs: "1500",
        sweepIntervalSeconds: "3600",
      }),
    );
  });

  afterEach(async function () {
    await rpc.setMode("forward");
  });

  after(async function () {
    await relayer?.stop();
    // Listening proxies keep the test process alive after the last test.
    await indexerProxy?.cut();
    await databaseProxy?.cut();
    await rpc?.close();
    await indexer?.stop();
    await chain?.close();
    await database?.drop();
  });

  it("answers liveness and readiness with each check; serves metrics only to the token's bearer", async function () {
    const live = await fetch(`${relayer.url}/health/live`);
    expect(live.status).to.equal(200);
    expect(await live.json()).to.deep.equal({ live: true });
    const { status, body } = await ready();
    expect(status, JSON.stringify(body)).to.equal(200);
    expect(Object.keys(body.checks)).to.have.members(["database", "rpc", "indexer", "prover", "balance"]);
    expect(body.checks.balance!.detail).to.match(/ETH, [0-9]+ relays' gas/);

    expect((await fetch(`${relayer.url}/metrics`)).status).to.equal(401);
    expect((await fetch(`${relayer.url}/metrics`, { headers: { authorization: "Bearer wrong-token-of-this-test" } })).status).to.equal(401);
    // The scheduled sweep runs at start (nothing expired yet): this waits for that run, or makes one.
    expect(await relayer.relayer.sweeps!.runOnce()).to.equal("done");
    const exposition = await scrape();
    expect(sample(exposition, "relayer_ready", { check: "balance" })).to.equal(1);
    expect(sample(exposition, "relayer_relaying_key_balance_eth")).to.be.above(0);
    expect(sample(exposition, "relayer_sweep_runs_total", { result: "done" })).to.be.at.least(1);
    expect(sample(exposition, "relayer_sweep_backlog")).to.equal(0);
  });

  it("moves the request, proof and lease metrics with a settle; the exposition passes promtool where it is installed", async function () {
    const before = await scrape();
    const note = await freshNote();
    const settled = await relayer.post(SETTLE, settleRequest(note));
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    const after = await scrape();
    const settles = { route: SETTLE, status: "200", code: "none" };
    expect(sample(after, "relayer_http_request_duration_seconds_count", settles) - sample(before, "relayer_http_request_duration_seconds_count", settles)).to.equal(1);
    expect(sample(after, "relayer_proof_duration_seconds_count") - sample(before, "relayer_proof_duration_seconds_count")).to.equal(1);
    expect(sample(after, "relayer_leases", { state: "settled" }) - sample(before, "relayer_leases", { state: "settled" })).to.equal(1);
    promtoolCheck(after);
  });

  it("indexer: answers liveness and readiness; its metrics show lag, ASP root age and anonymity set, and move with a deposit", async function () {
    expect((await fetch(`${indexer.url}/health/live`)).status).to.equal(200);
    const readyAnswer = await fetch(`${indexer.url}/health/ready`);
    const body = (await readyAnswer.json()) as { ready: boolean; checks: Record<string, { ok: boolean }> };
    expect(readyAnswer.status, JSON.stringify(body)).to.equal(200);
    expect(Object.keys(body.checks)).to.have.members(["database", "rpc", "synced", "postman"]);
    expect((await fetch(`${indexer.url}/metrics`)).status).to.equal(401);

    await indexer.indexer.sync.catchUp();
    const before = await scrapeIndexer();
    await freshNote();
    await chain.connection.networkHelpers.mine(3);
    const after = await scrapeIndexer();
    expect(sample(after, "indexer_state_tree_leaves") - sample(before, "indexer_state_tree_leaves")).to.equal(1);
    expect(sample(after, "indexer_lag_blocks")).to.equal(3);
    expect(sample(after, "indexer_asp_root_current")).to.equal(1);
    expect(sample(after, "indexer_asp_root_age_seconds")).to.be.at.least(0);
    expect(sample(after, "indexer_postman_balance_eth")).to.be.above(0);
    expect(sample(after, "indexer_http_request_duration_seconds_count", { route: "/health/ready", status: "200" })).to.be.at.least(1);
    promtoolCheck(after);
  });

  it("indexer: a postman that cannot pay a publication is not sent, readiness says so with the balance, and it publishes once funded", async function () {
    const { networkHelpers } = chain.connection;
    const postman = new Wallet(chain.postmanPrivateKey).address;
    const funded = await chain.connection.ethers.provider.getBalance(postman);
    await networkHelpers.setBalance(postman, 0n);
    try {
      await deposit(chain, chain.depositors.alice, tag++, 3_000_000n);
      await indexer.indexer.sync.catchUp();
      let refusal: unknown;
      await indexer.indexer.curator.publish().catch((error: unknown) => (refusal = error));
      expect(String(refusal)).to.contain(`the postman ${postman} holds 0.0 ETH`);
      expect(await chain.facilitator.entrypoint.latestRoot()).to.not.equal(indexer.indexer.curator.status().aspRoot);
      const readyAnswer = await fetch(`${indexer.url}/health/ready`);
      const body = (await readyAnswer.json()) as { checks: { postman: { ok: boolean; detail: string } } };
      expect(readyAnswer.status).to.equal(503);
      expect(body.checks.postman.ok).to.equal(false);
      expect(sample(await scrapeIndexer(), "indexer_postman_balance_eth")).to.equal(0);
    } finally {
      await networkHelpers.setBalance(postman, funded);
    }
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    expect(await chain.facilitator.entrypoint.latestRoot()).to.equal(indexer.indexer.curator.status().aspRoot);
    expect((await fetch(`${indexer.url}/health/ready`)).status).to.equal(200);
  });

  it("refuses spends with 503 RELAYER_UNFUNDED and the balance, before any proof or lease, while the relaying key cannot pay a relay; settles once funded", async function () {
    const { networkHelpers } = chain.connection;
    const funded = await chain.connection.ethers.provider.getBalance(relayerKey.address);
    const note = await freshNote();
    const before = await scrape();
    await networkHelpers.setBalance(relayerKey.address, 1000n);
    try {
      await new Promise((resolve) => setTimeout(resolve, READINESS_REUSE_MS));
      const refused = await relayer.post(SETTLE, settleRequest(note));
      expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
      expect(refused.body).to.deep.include({ settled: false, code: "RELAYER_UNFUNDED" });
      expect(refused.body.error).to.contain(`${relayerKey.address} holds 0.000000000000001 ETH`).and.contain("nothing was spent");
      expect(await relayer.relayer.store.getLease(nullifierHashOf(note.nullifier))).to.equal(undefined);
      const after = await scrape();
      expect(sample(after, "relayer_proof_duration_seconds_count")).to.equal(sample(before, "relayer_proof_duration_seconds_count"));
      expect(sample(after, "relayer_spends_refused_not_ready_total", { code: "RELAYER_UNFUNDED" })).to.equal(1);
      expect(sample(after, "relayer_ready", { check: "balance" })).to.equal(0);
      expect((await ready()).status).to.equal(503);
    } finally {
      await networkHelpers.setBalance(relayerKey.address, funded);
    }
    const settled = await relayer.post(SETTLE, settleRequest(note));
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
  });

  it("goes unready while the indexer or the database is away, refusing spends with 503 and nothing spent, and ready again once it is back", async function () {
    const note = await freshNote();
    for (const [check, proxy, code] of [
      ["indexer", indexerProxy, "INDEXER_UNAVAILABLE"],
      ["database", databaseProxy, "STORE_UNAVAILABLE"],
    ] as const) {
      await proxy.cut();
      try {
        await waitForReadiness(false);
        const { status, body } = await ready();
        expect(status).to.equal(503);
        expect(body.checks[check]!.ok, JSON.stringify(body)).to.equal(false);
        const refused = await relayer.post(SETTLE, settleRequest(note));
        expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
        expect(refused.body).to.deep.include({ settled: false, code });
        expect(refused.body.error).to.contain("nothing was spent");
      } finally {
        await proxy.restore();
      }
      await waitForReadiness(true);
    }
    expect((await relayer.post(SETTLE, settleRequest(note))).status).to.equal(200);
  });

  for (const method of ["eth_getBlockByNumber", "eth_getTransactionCount"]) {
    it(`answers 503 CHAIN_UNAVAILABLE, nothing spent, when the RPC answers ${method} with a JSON-RPC error; settles once it answers`, async function () {
      const note = await freshNote();
      await new Promise((resolve) => setTimeout(resolve, READINESS_REUSE_MS));
      await rpc.setMode(`error-on:${method}`);
      const refused = await relayer.post(SETTLE, settleRequest(note));
      expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
      expect(refused.body).to.deep.include({ settled: false, code: "CHAIN_UNAVAILABLE" });
      expect(refused.body.error).to.contain("nothing was spent");
      expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(false);
      await rpc.setMode("forward");
      const settled = await relayer.post(SETTLE, settleRequest(note));
      expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    });
  }

  it("answers 503 STORE_UNAVAILABLE, nothing spent, while PostgreSQL refuses connections (SQLSTATE 55000); settles once it accepts them", async function () {
    const note = await freshNote();
    await database.refuse();
    try {
      const refused = await relayer.post(SETTLE, settleRequest(note));
      expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
      expect(refused.body).to.deep.include({ settled: false, code: "STORE_UNAVAILABLE" });
      expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(false);
    } finally {
      await database.accept();
    }
    const settled = await relayer.post(SETTLE, settleRequest(note));
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
  });

  it("answers 202 with the hash once a relay stays unmined past the inclusion bound; the retry settles it", async function () {
    const note = await freshNote();
    const mining = manualMining(chain, () => relayer);
    const before = await scrape();
    await mining.setAutomine(false);
    try {
      const uncertain = await relayer.post(SETTLE, settleRequest(note));
      expect(uncertain.status, JSON.stringify(uncertain.body)).to.equal(202);
      const lease = await relayer.relayer.store.getLease(nullifierHashOf(note.nullifier));
      expect(uncertain.body).to.deep.include({ settled: false, code: "SETTLEMENT_UNCERTAIN", fundingTxHash: lease!.fundingTxHash });
      expect(uncertain.body.error).to.contain("not mined within 1500 ms");
      const after = await scrape();
      expect(sample(after, "relayer_settlements_uncertain_total") - sample(before, "relayer_settlements_uncertain_total")).to.equal(1);
      await mining.mine();
    } finally {
      await mining.setAutomine(true);
    }
    const replayed = await relayer.post(SETTLE, settleRequest(note));
    expect(replayed.status, JSON.stringify(replayed.body)).to.equal(200);
    expect(replayed.body).to.deep.include({ settled: true, replayed: true });
  });

  // Last: a shutdown that began is not undone.
  it("answers readiness 503 at once when a shutdown begins, so a load balancer stops sending", async function () {
    await relayer.relayer.inFlight.drain(0);
    const { status, body } = await ready();
    expect(status).to.equal(503);
    expect(body).to.deep.equal({ ready: false, shuttingDown: true });
  });
});

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "chai";
import { IndexerClient } from "../../indexer/client.js";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { createRefusableDatabase, type RefusableDatabase } from "../helpers/database.js";
import { sample } from "../helpers/metrics.js";
import { spawnService, type ServiceProcess } from "../helpers/service-process.js";
import { TEST_TOKEN, writeScreeningLists } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { serviceDeposit, settleX402Body } from "../relayer/helpers/relayer-harness.js";
import { relayerEnv, startRelayerProcess, type RelayerProcess } from "../relayer/helpers/relayer-process.js";

const SETTLE = "/api/facilitator/settle";
const SETTLE_X402 = "/api/facilitator/settle-x402";
const PRICE = 50_000n;

/** Polls `probe` every 200 ms until it holds, failing with `what` and `explain()` after `timeoutMs`. */
async function until(what: string, probe: () => Promise<boolean>, explain: () => Promise<string>, timeoutMs = 30_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await probe()); await sleep(200)) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs / 1000} s\n${await explain()}`);
  }
}

// What an operator watches, on real processes: the indexer (on PostgreSQL) and the relayer, each started as an
// operator starts it, scraped over HTTP as Prometheus scrapes them.
describe("operator signals: readiness, refusals and the sweep backlog follow a fault from its start to its end", function () {
  let chain: LocalChain;
  let indexer: ServiceProcess;
  let indexerClient: IndexerClient;
  let relayer: RelayerProcess;
  let relayerEnvironment: Record<string, string>;
  let metricsUrl: string;
  /** The indexer's database, of its own: the test refuses connections to it. */
  let database: RefusableDatabase;
  let tag = 1;

  const scrape = async () => (await fetch(metricsUrl)).text();
  const ready = async () => {
    const response = await fetch(`${relayer.url}/health/ready`);
    return { status: response.status, body: (await response.json()) as { ready: boolean; checks: Record<string, { ok: boolean; detail: string }> } };
  };
  /** What the services said last, for a wait that failed. */
  const explain = async () =>
    `relayer readiness: ${JSON.stringify((await ready().catch(() => undefined))?.body)}\nindexer log:\n${indexer.lines.slice(-10).join("\n")}`;
  /**
   * A deposit the ASP approved and the indexer process serves. The indexer's follow loop backs off after failures
   * (up to a minute): after a fault the first pass may come late.
   */
  const approvedNote = async (): Promise<Note> => {
    const note = await deposit(chain, chain.depositors.alice, tag++, 3_000_000n);
    const approved = async () => {
      const proof = await indexerClient.aspProof(note.label).catch(() => undefined);
      return proof !== undefined && (await indexerClient.status()).aspRootMatches;
    };
    await until("the indexer's approval of the deposit", approved, explain, 90_000);
    return note;
  };

  before(async function () {
    chain = await startLocalChain();
    database = await createRefusableDatabase("t_signals");
    const lists = writeScreeningLists();
    indexer = spawnService("indexer/main.ts", [], {
      INDEXER_RPC_URL: chain.rpc.url,
      INDEXER_TOKEN: TEST_TOKEN,
      INDEXER_ADDRESS_BOOK: chain.addressBookFile,
      INDEXER_DATABASE_URL: database.url,
      INDEXER_PORT: "0",
      INDEXER_POLL_INTERVAL_MS: "200",
      ASP_POSTMAN_PRIVATE_KEY: chain.postmanPrivateKey,
      ASP_SANCTIONS_LIST: lists.sanctionsList,
      ASP_OVERLAY_LIST: lists.overlayList,
      LOG_LEVEL: "info",
    });
    const { port } = await indexer.logLine("indexer API listening", 120_000);
    const indexerUrl = `http://127.0.0.1:${port as number}`;
    indexerClient = new IndexerClient({ baseUrl: indexerUrl, token: TEST_TOKEN });
    await until("the indexer's first sync", async () => (await indexerClient.status().catch(() => undefined))?.synced === true, async () => indexer.lines.join("\n"));
    relayerEnvironment = relayerEnv(chain, { url: indexerUrl }, {
      RELAYER_DB_PATH: path.join(mkdtempSync(path.join(tmpdir(), "relayer-signals-")), "relayer.sqlite"),
      RELAYER_METRICS_PORT: "0",
      // One round at start, the next in an hour: whatever expires meanwhile waits between rounds.
      RELAYER_SWEEP_INTERVAL_SECONDS: "3600",
    });
    relayer = await startRelayerProcess(relayerEnvironment);
    const metrics = await relayer.logLine("relayer metrics listening");
    metricsUrl = metrics.url as string;
  });
  after(async function () {
    await relayer?.stop();
    await indexer?.stop();
    await chain?.close();
    await database?.drop();
  });

  it("goes unready while the indexer's database refuses connections, refusing spends 503 INDEXER_UNAVAILABLE with Retry-After under their route, and ready again once it accepts them", async function () {
    const note = await approvedNote();
    expect((await ready()).status).to.equal(200);
    const before = await scrape();
    // Every refusal's series exists before the first refusal: the alert's increase() sees that one.
    expect(before).to.match(/^relayer_spends_refused_not_ready_total\{code="INDEXER_UNAVAILABLE"\} 0$/m);
    expect(before).to.match(/^relayer_http_errors_total\{code="INDEXER_UNAVAILABLE"\} 0$/m);

    await database.refuse();
    try {
      await until("the relayer's readiness to fail", async () => (await ready()).status === 503, explain);
      const { body } = await ready();
      expect(body.checks.indexer!.ok, JSON.stringify(body)).to.equal(false);
      expect(body.checks.database!.ok).to.equal(true);

      const refused = await fetch(new URL(SETTLE, relayer.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ paymentDetails: { payTo: chain.depositors.bob.address, maxAmountRequired: "1000000" }, serviceDeposit: serviceDeposit(note) }),
      });
      expect(refused.status).to.equal(503);
      expect(refused.headers.get("retry-after")).to.match(/^[1-9][0-9]*$/);
      expect(await refused.json()).to.deep.include({ settled: false, code: "INDEXER_UNAVAILABLE" });
      expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(false);

      const during = await scrape();
      expect(sample(during, "relayer_ready", { check: "indexer" })).to.equal(0);
      expect(sample(during, "relayer_spends_refused_not_ready_total", { code: "INDEXER_UNAVAILABLE" })).to.equal(1);
      expect(sample(during, "relayer_http_errors_total", { code: "INDEXER_UNAVAILABLE" })).to.equal(1);
      // Under its route, where the dashboard's spends panel finds it.
      expect(sample(during, "relayer_http_request_duration_seconds_count", { route: SETTLE, status: "503", code: "INDEXER_UNAVAILABLE" })).to.equal(1);
    } finally {
      await database.accept();
    }

    await until("the relayer's readiness to pass again", async () => (await ready()).status === 200, explain);
    expect(sample(await scrape(), "relayer_ready", { check: "indexer" })).to.equal(1);
    const settled = await relayer.post(SETTLE, {
      paymentDetails: { payTo: chain.depositors.bob.address, maxAmountRequired: "1000000" },
      serviceDeposit: serviceDeposit(note),
    });
    expect(settled).to.not.equal("lost");
    expect((settled as { status: number }).status, JSON.stringify(settled)).to.equal(200);
  });

  it("counts an expired authorization in the sweep backlog between rounds, until a sweep by a key with no role returns it", async function () {
    const note = await approvedNote();
    const settled = await relayer.post(SETTLE_X402, settleX402Body(chain, note, PRICE));
    expect(settled).to.not.equal("lost");
    const { status, body } = settled as { status: number; body: Record<string, unknown> };
    expect(status, JSON.stringify(body)).to.equal(200);
    const pool = body.payer as string;
    expect(sample(await scrape(), "relayer_sweep_backlog")).to.equal(0);

    // The seller never uses the authorization, and it expires long before the relayer's next round.
    await chain.connection.networkHelpers.time.increaseTo((body.validBefore as number) + 1);
    expect(sample(await scrape(), "relayer_sweep_backlog")).to.equal(1);

    // The operator sweeps by hand with the relaying key, which holds no role: returning the pool's own authorization needs none.
    const { entrypoint } = chain.facilitator;
    const swept = spawnService("scripts/sweep-payers.ts", [], relayerEnvironment);
    expect(await swept.exited, swept.lines.join("\n")).to.equal(0);
    expect(swept.lines.join("\n")).to.contain("1 expired payer(s): 1 refunded");
    const refunds = await entrypoint.queryFilter(entrypoint.filters.RefundDeposited(pool));
    const ofNote = refunds.filter((event) => event.args.originNullifierHash === nullifierHashOf(note.nullifier));
    expect(ofNote.map((event) => event.args.value)).to.deep.equal([PRICE]);
    expect(sample(await scrape(), "relayer_sweep_backlog")).to.equal(0);
  });
});

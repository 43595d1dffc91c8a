import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { decodeXPayment } from "../../sdk/x402/index.js";
import { poolAnswersFor } from "../helpers/pool-authorization.js";
import { Wallet } from "ethers";
import type { FaultPoint } from "../../relayer/ops/faults.js";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { noteToWire } from "../../sdk/client/facilitator-client.js";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { spawnService } from "../helpers/service-process.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";
import { settleX402Body } from "./helpers/relayer-harness.js";
import { relayerEnv, startRelayerProcess, type RelayerProcess } from "./helpers/relayer-process.js";

const PRICE = 50_000n;
const GROSS = grossForNet(PRICE, 500n);
const SETTLE_X402 = "/api/facilitator/settle-x402";
const SETTLE = "/api/facilitator/settle";

/**
 * Issue 8's promise, tested by killing a real relayer process at each step of a spend and retrying the same
 * request on a restarted one sharing its database: the chain and the answers agree, nothing is withdrawn twice,
 * a spent note is never answered as unspent, and the funds are authorized by the pool (the payment answered) or in the note.
 */
describe("relayer faults: a crash at each step of a spend, then a restart and a retry", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let running: RelayerProcess | undefined;
  let tag = 200;
  const dbPath = path.join(mkdtempSync(path.join(tmpdir(), "relayer-faults-")), "relayer.sqlite");

  const start = async (overrides: Record<string, string> = {}) => {
    running = await startRelayerProcess(
      relayerEnv(chain, indexer, {
        RELAYER_DB_PATH: dbPath,
        NODE_ENV: "test",
        RELAYER_LEASE_STALE_MS: "2000",
        RELAYER_LEASE_WAIT_MS: "15000",
        ...overrides,
      }),
    );
    return running;
  };
  const stop = async () => {
    await running?.stop();
    running = undefined;
  };

  /** A fresh, ASP-approved note. */
  const freshNote = async (value = 1_000_000n): Promise<Note> => {
    const note = await deposit(chain, chain.depositors.alice, tag++, value);
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    return note;
  };

  const settleX402Of = (note: Note) => settleX402Body(chain, note, PRICE);

  /** The relay transactions that spent `note`, from the pool's Withdrawn events. */
  const withdrawalsOf = async (note: Note) => {
    const pool = chain.facilitator.privacyPool;
    const events = await pool.queryFilter(pool.filters.Withdrawn());
    return events.filter((event) => event.args.spentNullifierHash === nullifierHashOf(note.nullifier));
  };

  const usdcBalance = (address: string) => chain.facilitator.usdc.balanceOf(address);


  /** Kills the relayer at `point` during a settle-x402 of `note`; returns the note and the request. */
  async function crashDuringSettleX402(point: FaultPoint, note?: Note) {
    note ??= await freshNote();
    const body = settleX402Of(note);
    const crashing = await start({ RELAYER_CRASH_AT: point });
    expect(await crashing.post(SETTLE_X402, body)).to.equal("lost");
    expect(await crashing.exited).to.equal("SIGKILL");
    running = undefined;
    return { note, body };
  }

  /** After the retry: one withdrawal of the note, and the pool authorizes exactly the seller's amount, the payment answered. */
  async function expectSettledOnce(note: Note, answer: { status: number; body: Record<string, unknown> } | "lost") {
    expect(answer).to.not.equal("lost");
    const { status, body } = answer as { status: number; body: Record<string, unknown> };
    expect(status, JSON.stringify(body)).to.equal(200);
    expect(body.settled).to.equal(true);
    const spends = await withdrawalsOf(note);
    expect(spends).to.have.length(1);
    expect(spends[0]!.transactionHash).to.equal(body.fundingTxHash);
    const { authorization } = decodeXPayment(body.xPayment as string).payload;
    expect(authorization).to.deep.include({ from: body.payer, value: PRICE.toString() });
    expect(body.payer).to.equal(await chain.facilitator.privacyPool.getAddress());
    expect(await poolAnswersFor(chain.facilitator, body.xPayment as string)).to.equal(true);
    return body;
  }

  before(async function () {
    chain = await startLocalChain();
    indexer = await startIndexer(buildIndexerConfig(chain));
  });
  afterEach(stop);
  after(async function () {
    await indexer?.stop();
    await chain?.close();
  });

  it("before the lease is reserved: nothing was spent, the retry settles", async function () {
    const { note, body } = await crashDuringSettleX402("before-reserve");
    expect(await withdrawalsOf(note)).to.have.length(0);
    const retried = await (await start()).post(SETTLE_X402, body);
    const settled = await expectSettledOnce(note, retried);
    expect(settled.replayed).to.equal(false);
  });

  it("after the lease is reserved, before sending: the stale lease is freed and the retry settles once", async function () {
    const { note, body } = await crashDuringSettleX402("after-reserve");
    expect(await withdrawalsOf(note)).to.have.length(0);
    const retried = await (await start()).post(SETTLE_X402, body);
    const settled = await expectSettledOnce(note, retried);
    expect(settled.replayed).to.equal(false);
  });

  it("after the withdrawal is mined, before the lease is finalized: the retry replays the payment", async function () {
    const { note, body } = await crashDuringSettleX402("after-mined");
    expect(await withdrawalsOf(note)).to.have.length(1);
    const retried = await (await start()).post(SETTLE_X402, body);
    const settled = await expectSettledOnce(note, retried);
    expect(settled).to.deep.include({ replayed: true, proofTimeMs: null, gross: GROSS.toString() });
  });

  it("after the withdrawal is sent, before it is mined: uncertain until mined, then the payment, withdrawn once", async function () {
    const provider = chain.connection.provider;
    const fresh = await freshNote();
    await provider.request({ method: "evm_setAutomine", params: [false] });
    try {
      const { note, body } = await crashDuringSettleX402("after-send", fresh);
      const relayer = await start({ RELAYER_LEASE_WAIT_MS: "1500" });
      const pending = await relayer.post(SETTLE_X402, body);
      expect(pending).to.not.equal("lost");
      const { status, body: uncertain } = pending as { status: number; body: Record<string, unknown> };
      expect(status).to.equal(202);
      expect(uncertain).to.deep.include({ settled: false, code: "SETTLEMENT_UNCERTAIN", state: "uncertain" });
      expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(false);

      await provider.request({ method: "evm_mine", params: [] });
      const settled = await expectSettledOnce(note, await relayer.post(SETTLE_X402, body));
      expect(settled.fundingTxHash).to.equal(uncertain.fundingTxHash);
      expect(settled.replayed).to.equal(true);
    } finally {
      await provider.request({ method: "evm_setAutomine", params: [true] });
    }
  });

  it("a generic settle killed after sending: the retry answers the mined transaction and the change note", async function () {
    const note = await freshNote();
    const payTo = Wallet.createRandom().address;
    const body = { paymentDetails: { payTo, maxAmountRequired: PRICE.toString() }, serviceDeposit: noteToWire(note) };
    const crashing = await start({ RELAYER_CRASH_AT: "after-send" });
    expect(await crashing.post(SETTLE, body)).to.equal("lost");
    expect(await crashing.exited).to.equal("SIGKILL");
    running = undefined;

    const retried = await (await start()).post(SETTLE, body);
    expect(retried).to.not.equal("lost");
    const { status, body: answer } = retried as { status: number; body: Record<string, unknown> };
    expect(status, JSON.stringify(answer)).to.equal(200);
    const spends = await withdrawalsOf(note);
    expect(spends.map((event) => event.transactionHash)).to.deep.equal([answer.txHash]);
    expect(answer).to.deep.include({ replayed: true, amount: PRICE.toString(), remainingValue: (note.value - PRICE).toString() });
    expect(await usdcBalance(payTo)).to.equal(PRICE - (PRICE * 500n) / 10_000n);
    expect((answer.nextDeposit as Record<string, string>).value).to.equal((note.value - PRICE).toString());
  });

  it("refuses fault injection outside tests", async function () {
    const refused = startRelayerProcess(relayerEnv(chain, indexer, { RELAYER_DB_PATH: dbPath, RELAYER_CRASH_AT: "after-send" }));
    const error = await refused.then(() => undefined, (failure: unknown) => failure as Error);
    expect(error?.message).to.contain("RELAYER_CRASH_AT is fault injection for tests");
  });

  it("exits non-zero, closing what it opened, when its port is taken (EADDRINUSE)", async function () {
    const squatter = net.createServer().listen(0, "127.0.0.1");
    await once(squatter, "listening");
    try {
      const port = (squatter.address() as AddressInfo).port;
      const blocked = spawnService("relayer/main.ts", [], relayerEnv(chain, indexer, { RELAYER_DB_PATH: dbPath, RELAYER_HOST: "127.0.0.1", RELAYER_PORT: String(port) }));
      // Without closing the prover threads and the database, the process would stay up with nothing listening.
      expect(await blocked.exited).to.equal(1);
      expect(blocked.lines.join("\n")).to.contain("EADDRINUSE");
    } finally {
      squatter.close();
    }
  });

  it("with the indexer down: 503 and nothing spent; the same note settles once it is back", async function () {
    const note = await freshNote();
    const body = settleX402Of(note);
    // The relayer checks the indexer at start: it goes away after, through a proxy that is then cut.
    const proxy = await startTcpProxy(indexer.url);
    const cut = await start({ INDEXER_URL: proxy.url });
    await proxy.cut();
    const refused = await cut.post(SETTLE_X402, body);
    expect(refused).to.not.equal("lost");
    expect((refused as { status: number }).status).to.equal(503);
    expect((refused as { body: object }).body).to.deep.include({ settled: false, code: "INDEXER_UNAVAILABLE" });
    expect(await withdrawalsOf(note)).to.have.length(0);
    // The operator's side: why, and which request it refused.
    expect(await cut.logLine("upstream failure")).to.deep.include({ code: "INDEXER_UNAVAILABLE", route: SETTLE_X402 });
    // The request line follows the answer: waited for, not looked up.
    expect(await cut.logLine({ msg: "request", code: "INDEXER_UNAVAILABLE" })).to.deep.include({ status: 503 });
    await stop();

    await expectSettledOnce(note, await (await start()).post(SETTLE_X402, body));
  });
});

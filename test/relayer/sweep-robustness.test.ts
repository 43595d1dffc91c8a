import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { pino } from "pino";
import type { PoolChain } from "../../relayer/chain/pool-chain.js";
import { RelayerMetrics } from "../../relayer/ops/metrics.js";
import { sweepExpiredPayers } from "../../relayer/x402/payer-sweep.js";
import { SweepSchedule } from "../../relayer/x402/sweep-schedule.js";
import { DatabaseSync } from "node:sqlite";
import { returnUnusedPayment } from "../../sdk/agent/index.js";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { poolAnswersFor } from "../helpers/pool-authorization.js";
import { sample } from "../helpers/metrics.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { buildRelayerConfig, logLines, PAYER_KEY_SECRET, relayerKey, settleX402Body, startRelayer, treasury, type RunningRelayer } from "./helpers/relayer-harness.js";

const SETTLE_X402 = "/api/facilitator/settle-x402";
const PRICE = 50_000n;
const METRICS_TOKEN = "metrics-token-of-the-sweep-robustness-test";
/** The secret the operator used before rotating PAYER_KEY_SECRET: its payers are not this relayer's to sweep. */
const EARLIER_PAYER_KEY_SECRET = "0x1b7e4c2d9a0f3e5d6c8b7a9f0e1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5";

describe("relayer: the sweep goes on past a payment it cannot return", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  /** Settled payments under the earlier PAYER_KEY_SECRET, before the rotation; no sweep of its own. */
  let earlier: RunningRelayer;
  /** The same store after the rotation, sweeping every hour (a round at start), its log kept. */
  let current: RunningRelayer;
  const log = logLines();
  let tag = 901;
  const dbPath = path.join(mkdtempSync(path.join(tmpdir(), "relayer-rotated-")), "relayer.sqlite");

  const approvedNote = async (): Promise<Note> => {
    const note = await deposit(chain, chain.depositors.bob, tag++, 1_000_000n);
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    return note;
  };
  /** A settle-x402 payment whose seller never uses the authorization: its price waits in the pool. */
  const abandonedPayment = async (relayer: RunningRelayer) => {
    const note = await approvedNote();
    const settled = await relayer.post(SETTLE_X402, settleX402Body(chain, note, PRICE));
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    const payer = settled.body.payer as string;
    expect(await poolAnswersFor(chain.facilitator, settled.body.xPayment as string)).to.equal(true);
    return { nullifierHash: nullifierHashOf(note.nullifier), payer, validBefore: settled.body.validBefore as number, xPayment: settled.body.xPayment as string };
  };
  /** The refunds the chain made of the payment of the note of `nullifierHash` (RefundDeposited names the pool as payer). */
  const refundValuesOf = async (nullifierHash: bigint) => {
    const { entrypoint, privacyPool } = chain.facilitator;
    const events = await entrypoint.queryFilter(entrypoint.filters.RefundDeposited(await privacyPool.getAddress()));
    return events.filter((event) => event.args.originNullifierHash === nullifierHash).map((event) => event.args.value);
  };
  /** The lease's row as an earlier version wrote it: no refund anchor. */
  const forgetRefundAnchor = (nullifierHash: bigint) => {
    const database = new DatabaseSync(dbPath);
    database.prepare("UPDATE leases SET refund_anchor = NULL WHERE nullifier_hash = ?").run(nullifierHash.toString());
    database.close();
  };
  const scrape = async () => (await fetch(`${current.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const refundsOf = async (payer: string) => {
    const { entrypoint } = chain.facilitator;
    return entrypoint.queryFilter(entrypoint.filters.RefundDeposited(payer));
  };

  before(async function () {
    chain = await startLocalChain();
    indexer = await startIndexer(buildIndexerConfig(chain));
    await indexer.indexer.sync.catchUp();
    const config = { dbPath, pricingMode: "paid", feeClaimMinimum: "1" };
    earlier = await startRelayer(buildRelayerConfig(chain, indexer, { ...config, payerKeySecret: EARLIER_PAYER_KEY_SECRET }));
    current = await startRelayer(
      buildRelayerConfig(chain, indexer, { ...config, sweepIntervalSeconds: "3600", metricsToken: METRICS_TOKEN, logLevel: "info" }),
      { logTo: log.destination },
    );
    expect(await current.relayer.sweeps!.runOnce()).to.equal("done");
  });
  after(async function () {
    await current?.stop();
    await earlier?.stop();
    await indexer?.stop();
    await chain?.close();
  });

  it("returns the payments after one it cannot return (a lease an earlier version stored without its refund anchor), claims the fees, and reports that one", async function () {
    // The first lease in the sweep's order lacks what a return needs; the next was settled before the operator rotated
    // PAYER_KEY_SECRET, which no longer matters (the pool is the payer); the last is the current relayer's.
    const stranded = await abandonedPayment(current);
    forgetRefundAnchor(stranded.nullifierHash);
    await chain.connection.networkHelpers.time.increase(5);
    const rotated = await abandonedPayment(earlier);
    const own = await abandonedPayment(current);
    const { usdc, privacyPool } = chain.facilitator;
    const accrued = await privacyPool.accruedFeesOf(treasury.address);
    expect(accrued).to.be.greaterThan(1n);
    const treasuryBefore = await usdc.balanceOf(treasury.address);
    const poolBefore = await usdc.balanceOf(await privacyPool.getAddress());
    const before = await scrape();

    await chain.connection.networkHelpers.time.increaseTo(own.validBefore + 1);
    await current.relayer.sweeps!.runOnce();

    // Both others come back as refund notes, moving nothing: the prices never left the pool.
    for (const payment of [rotated, own]) {
      expect(await current.relayer.store.getSweep(payment.nullifierHash)).to.deep.include({ outcome: "deposited", amount: PRICE });
      expect(await refundValuesOf(payment.nullifierHash)).to.deep.equal([PRICE]);
    }
    // The round's fee claim went out anyway: all the takes but the unit the pool keeps.
    expect(await privacyPool.accruedFeesOf(treasury.address)).to.equal(1n);
    expect((await usdc.balanceOf(treasury.address)) - treasuryBefore).to.equal(accrued - 1n);
    expect(await usdc.balanceOf(await privacyPool.getAddress())).to.equal(poolBefore - (accrued - 1n));
    // The first is unrecorded, reported by metric and by a log line naming its lease, never a secret.
    expect(await current.relayer.store.getSweep(stranded.nullifierHash)).to.equal(undefined);
    expect(await refundValuesOf(stranded.nullifierHash)).to.deep.equal([]);
    const after = await scrape();
    const payers = (outcome: string) => sample(after, "relayer_sweep_payers_total", { outcome }) - sample(before, "relayer_sweep_payers_total", { outcome });
    expect(payers("failed")).to.equal(1);
    expect(payers("deposited")).to.equal(2);
    expect(sample(after, "relayer_sweep_backlog")).to.equal(1);
    const failures = log.lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === "payer refund failed; the next round retries it");
    expect(failures.map((line) => line.nullifierHash)).to.deep.equal([stranded.nullifierHash.toString()]);
    expect(failures[0]!.reason).to.contain("refund anchor");
    const written = log.lines.join("\n");
    for (const secret of [PAYER_KEY_SECRET, EARLIER_PAYER_KEY_SECRET, relayerKey.privateKey]) expect(written).to.not.contain(secret.slice(2));

    // Returned by hand from the payment the agent was answered, as the log line says: the next round records it.
    await returnUnusedPayment({ signer: chain.depositors.bob, addressBook: chain.facilitator.addressBook, xPayment: stranded.xPayment });
    expect(await refundValuesOf(stranded.nullifierHash)).to.deep.equal([PRICE]);
    await current.relayer.sweeps!.runOnce();
    expect(await current.relayer.store.getSweep(stranded.nullifierHash)).to.deep.include({ outcome: "deposited", amount: PRICE });
  });

  it("takes a refund another sweeper made between its reads and its transaction for what it is: no failed round, no error logged", async function () {
    const payment = await abandonedPayment(current);
    await chain.connection.networkHelpers.time.increaseTo(payment.validBefore + 1);
    const { store } = current.relayer;
    const chainOf = current.relayer.chain;
    // `npm run sweep:payers` beside the schedule: its refund is mined right before the scheduled round sends its own.
    let byHand: ReturnType<typeof sweepExpiredPayers> | undefined;
    const racing = Object.create(chainOf) as PoolChain;
    racing.sendFromRelayer = async (request) => {
      byHand ??= sweepExpiredPayers({ store, chain: chainOf });
      await byHand;
      return chainOf.sendFromRelayer(request);
    };
    const metrics = new RelayerMetrics();
    const raceLog = logLines();
    const schedule = new SweepSchedule({
      store,
      chain: racing,
      metrics,
      logger: pino({ level: "info" }, raceLog.destination),
      intervalMs: 3_600_000,
      treasury: treasury.address,
      feeClaimMinimum: 10n ** 12n,
    });

    expect(await schedule.runOnce()).to.equal("done");
    expect(byHand, "the other sweeper ran").to.not.equal(undefined);
    const [refund, ...more] = (await refundsOf(payment.payer)).filter((event) => event.args.originNullifierHash === payment.nullifierHash);
    expect(more).to.deep.equal([]);
    expect((await byHand!).records.map((record) => record.depositTxHash)).to.deep.equal([refund!.transactionHash]);
    expect(await store.getSweep(payment.nullifierHash)).to.deep.include({ outcome: "deposited", amount: PRICE, depositTxHash: refund!.transactionHash });
    expect(await poolAnswersFor(chain.facilitator, payment.xPayment)).to.equal(false);
    const exposition = await metrics.registry.metrics();
    expect(sample(exposition, "relayer_sweep_runs_total", { result: "failed" })).to.equal(0);
    expect(sample(exposition, "relayer_sweep_payers_total", { outcome: "failed" })).to.equal(0);
    expect(sample(exposition, "relayer_sweep_payers_total", { outcome: "deposited" })).to.equal(1);
    const levels = raceLog.lines.map((line) => (JSON.parse(line) as { level: number; msg: string }));
    expect(levels.filter((line) => line.level >= 40), raceLog.lines.join("\n")).to.deep.equal([]);
  });
});

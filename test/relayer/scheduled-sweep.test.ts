import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "chai";
import { poolAnswersFor } from "../helpers/pool-authorization.js";
import { Wallet } from "ethers";
import { noteToWire } from "../../sdk/client/facilitator-client.js";
import { createNote, deriveRefundSecrets, nullifierHashOf } from "../../sdk/index.js";
import { createTestSchema, type TestSchema } from "../helpers/database.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { buildRelayerConfig, settleX402Body, startRelayer, treasury, type RunningRelayer } from "./helpers/relayer-harness.js";
import { sample } from "../helpers/metrics.js";

const SETTLE_X402 = "/api/facilitator/settle-x402";
const PRICE = 50_000n;
const METRICS_TOKEN = "metrics-token-of-the-sweep-test";

describe("relayer: the payer sweep runs by itself", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let schema: TestSchema;
  const relayers: RunningRelayer[] = [];

  before(async function () {
    // Deployed as `npm run stack` deploys: the relaying key holds no role, and needs none to sweep.
    chain = await startLocalChain();
    indexer = await startIndexer(buildIndexerConfig(chain));
    await indexer.indexer.sync.catchUp();
    schema = await createTestSchema();
    const databaseUrl = new URL(schema.connectionString);
    databaseUrl.searchParams.set("options", `-c search_path=${schema.schema}`);
    const config = () =>
      buildRelayerConfig(chain, indexer, {
        databaseUrl: databaseUrl.toString(),
        pricingMode: "paid",
        sweepIntervalSeconds: "1",
        feeClaimMinimum: "1",
        metricsToken: METRICS_TOKEN,
      });
    relayers.push(...(await Promise.all([startRelayer(config()), startRelayer(config())])));
  });
  after(async function () {
    await Promise.all(relayers.map((relayer) => relayer.stop()));
    await indexer?.stop();
    await chain?.close();
    await schema?.drop();
  });

  it("turns a payment that expired unused into the agent's refund note with no command run; two relayers on one PostgreSQL sweep it once", async function () {
    const note = await deposit(chain, chain.depositors.bob, 701, 1_000_000n);
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    const settled = await relayers[0]!.post(SETTLE_X402, settleX402Body(chain, note, PRICE));
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    const payer = settled.body.payer as string;
    const { entrypoint } = chain.facilitator;
    expect(await poolAnswersFor(chain.facilitator, settled.body.xPayment as string)).to.equal(true);

    // The seller never uses the authorization; once the chain's clock passes it, a scheduled round sweeps it.
    const { time } = chain.connection.networkHelpers;
    await time.increaseTo((settled.body.validBefore as number) + 1);
    const nullifierHash = nullifierHashOf(note.nullifier);
    for (let waited = 0; (await relayers[0]!.relayer.store.getSweep(nullifierHash)) === undefined; waited += 200) {
      if (waited > 20_000) throw new Error("no scheduled sweep took the expired payer");
      await sleep(200);
    }
    // More rounds of both relayers pass: none sweeps it again.
    await sleep(2_500);
    expect(await relayers[1]!.relayer.store.getSweep(nullifierHash)).to.deep.include({ outcome: "deposited", amount: PRICE });
    expect(await poolAnswersFor(chain.facilitator, settled.body.xPayment as string)).to.equal(false);
    const refunds = await entrypoint.queryFilter(entrypoint.filters.RefundDeposited(payer));
    expect(refunds.map((event) => event.args.originNullifierHash)).to.deep.equal([nullifierHash]);

    const expositions = await Promise.all(
      relayers.map(async (relayer) => (await fetch(`${relayer.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()),
    );
    const total = (name: string, labels: Record<string, string> = {}) => expositions.reduce((sum, text) => sum + sample(text, name, labels), 0);
    expect(total("relayer_sweep_payers_total", { outcome: "deposited" })).to.equal(1);
    expect(total("relayer_sweep_refunded_usdc_atomic_total")).to.equal(Number(PRICE));
    expect(total("relayer_sweep_runs_total", { result: "failed" })).to.equal(0);
    expect(total("relayer_sweep_runs_total", { result: "done" })).to.be.at.least(4);
    for (const text of expositions) expect(sample(text, "relayer_sweep_backlog")).to.equal(0);

    // The refund is the agent's note, a leaf of the state tree under the label of the note that paid.
    await indexer.indexer.sync.catchUp();
    const refundNote = createNote(PRICE, note.label, deriveRefundSecrets(note), "refund");
    expect(refunds[0]!.args.commitment).to.equal(refundNote.commitment);
    expect((await indexer.client.stateProof(refundNote.commitment)).witness.root).to.equal(await chain.facilitator.privacyPool.currentRoot());
  });

  it("claims the takes the relays accrued in the pool for the treasury, in a round, keeping one unit in the pool", async function () {
    const note = await deposit(chain, chain.depositors.bob, 702, 1_000_000n);
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    const { usdc, privacyPool } = chain.facilitator;
    const before = await usdc.balanceOf(treasury.address);
    const fromBlock = await chain.connection.ethers.provider.getBlockNumber();
    const settled = await relayers[1]!.post("/api/facilitator/settle", {
      paymentDetails: { scheme: "exact", payTo: Wallet.createRandom().address, maxAmountRequired: "500000", networkId: "eip155:31337" },
      serviceDeposit: noteToWire(note),
    });
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    const take = BigInt(settled.body.fee as string);
    expect(take).to.be.greaterThan(0n);

    for (let waited = 0; (await usdc.balanceOf(treasury.address)) === before; waited += 200) {
      if (waited > 20_000) throw new Error("no sweep round claimed the treasury's fees");
      await sleep(200);
    }
    // Everything accrued left (this take, and the first test's unless a round claimed it already), but the unit the
    // pool keeps.
    expect(await privacyPool.accruedFeesOf(treasury.address)).to.equal(1n);
    const claims = await privacyPool.queryFilter(privacyPool.filters.FeesClaimed(treasury.address), fromBlock);
    expect(claims.reduce((sum, claim) => sum + claim.args.amount, 0n)).to.equal((await usdc.balanceOf(treasury.address)) - before);
    expect((await usdc.balanceOf(treasury.address)) - before).to.be.at.least(take - 1n);
    await sleep(1_500);
    const text = await (await fetch(`${relayers[0]!.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(sample(text, "relayer_treasury_accrued_fees_usdc_atomic")).to.equal(1);
  });
});

import { expect } from "chai";
import { seedPool } from "../../bench/settle/seeded-pool.js";
import { noteToWire } from "../../sdk/client/facilitator-client.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { startPaymentWorld, type PaymentWorld } from "../x402/helpers/payment-world.js";

const SEEDED = 300;

describe("a bench pool seeded with leaves on chain and in the indexer", function () {
  this.timeout(120_000);
  let world: PaymentWorld;
  let seededRoot: bigint;

  before(async function () {
    world = await startPaymentWorld({
      beforeIndexer: async (chain, config) => {
        seededRoot = await seedPool(chain, config, SEEDED);
      },
    });
  });

  after(async function () {
    await world?.close();
  });

  it("starts the indexer on the seeded leaves and labels, then follows real deposits with the pool's root", async function () {
    const { indexer } = world.indexer;
    expect(indexer.queries.status().leafCount).to.equal(SEEDED);
    expect(indexer.sync.stateTree.root).to.equal(seededRoot);
    expect(await world.chain.facilitator.privacyPool.currentRoot()).to.equal(seededRoot);

    const note = await deposit(world.chain, world.chain.depositors.alice, 7);
    await world.syncIndexer();

    const pool = world.chain.facilitator.privacyPool;
    expect(indexer.sync.stateTree.size).to.equal(SEEDED + 1);
    expect(indexer.sync.stateTree.indexOf(note.commitment)).to.equal(SEEDED);
    expect(indexer.sync.stateTree.root).to.equal(await pool.currentRoot());
    const status = indexer.queries.status();
    expect(status.aspLabelCount).to.equal(SEEDED + 1);
    expect(status.aspRootMatches).to.equal(true);
    expect(await world.chain.facilitator.entrypoint.latestRoot()).to.equal(status.aspRoot);
  });

  it("settles a real note through the relayer against the seeded trees", async function () {
    const note = await deposit(world.chain, world.chain.depositors.bob, 8);
    await world.syncIndexer();
    const answer = await world.relayer.post("/api/facilitator/settle", {
      paymentDetails: { payTo: world.payTo.v2, maxAmountRequired: world.price.toString() },
      serviceDeposit: noteToWire(note),
    });
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
  });
});

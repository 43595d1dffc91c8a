import { expect } from "chai";
import { Wallet } from "ethers";
import { changeNoteOf, namePublicSignals, refundAnchorOf } from "../../sdk/index.js";
import { FacilitatorClient, noteFromWire, noteToWire, type WireNote } from "../../sdk/client/facilitator-client.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { deposit as depositInPool } from "../indexer/helpers/pool-actions.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";
import { startRecordingProxy } from "./helpers/recording-proxy.js";

/**
 * docs/design.md 9, "What each party learns", played by the operator: what it can work out from the request bodies it
 * receives and the pool's public events. The rows where it is still trusted are shown here as they are, so the docs
 * cannot claim more than the code gives.
 */
describe("what the operator, or a proxy that logs request bodies, learns from a detour payment (docs/design.md 9)", function () {
  let world: PaymentWorld;

  before(async function () {
    world = await startPaymentWorld();
  });
  after(async function () {
    await world?.close();
  });

  it("custodial: the request body holds the note's secrets and the change note's, so whoever reads it withdraws the agent's change to itself", async function () {
    const proxy = await startRecordingProxy(world.relayer.url, (_path, answer) => answer);
    try {
      const { agent, vault, events } = await world.newAgent(world.chain.depositors.erin, 1_000_000n, { facilitator: new FacilitatorClient(proxy.url), custody: "custodial" });
      expect((await agent.fetch(world.sellers.v2.resourceUrl)).status).to.equal(200);
      const [agentsChange] = await world.unspentNotes(vault);

      const settle = proxy.requests.find((request) => request.url === "/api/facilitator/settle-x402")!;
      const body = JSON.parse(settle.body) as { serviceDeposit: WireNote; nextNullifier: string; nextSecret: string };
      const settled = events.find((event) => event.step === "settled")!;
      const gross = BigInt((settled as { answer: { gross: string } }).answer.gross);
      const change = changeNoteOf(noteFromWire(body.serviceDeposit), gross, { nullifier: BigInt(body.nextNullifier), secret: BigInt(body.nextSecret) });
      expect(change).to.deep.equal(agentsChange);

      await world.syncIndexer();
      const thief = Wallet.createRandom().address;
      const taken = await world.relayer.post("/api/withdraw", { ...noteToWire(change), recipient: thief });
      expect(taken.status).to.equal(200);
      expect(await world.usdcBalance(thief)).to.be.greaterThan(0n);
      expect(await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl))).to.have.property("code");
    } finally {
      await proxy.close();
    }
  });

  it("agent-proved: receives no note secret, value or label, yet its refund precommitment opens the proof's refund anchor against the public deposit labels and names the depositor", async function () {
    const { alice, bob, carol, dave } = world.chain.depositors;
    for (const [i, other] of [alice, bob, carol].entries()) await depositInPool(world.chain, other, 8800 + i);
    const proxy = await startRecordingProxy(world.relayer.url, (_path, answer) => answer);
    try {
      const { agent, deposit, address } = await world.newAgent(dave, 1_000_000n, { facilitator: new FacilitatorClient(proxy.url) });
      expect((await agent.fetch(world.sellers.v2.resourceUrl)).status).to.equal(200);

      const bodies = proxy.requests.map((request) => request.body).join("\n");
      for (const secret of [deposit.note.nullifier, deposit.note.secret, deposit.note.label]) expect(bodies).to.not.contain(secret.toString());

      const settle = proxy.requests.find((request) => request.url === "/api/facilitator/settle-x402-proof")!;
      const body = JSON.parse(settle.body) as { refundPrecommitment: string; proof: { publicSignals: string[] } };
      const { refundAnchor } = namePublicSignals(body.proof.publicSignals);
      const pool = world.chain.facilitator.privacyPool;
      const deposits = await pool.queryFilter(pool.filters.Deposited());
      const opened = deposits.filter((event) => refundAnchorOf(event.args.label, BigInt(body.refundPrecommitment)) === refundAnchor);
      expect(opened.map((event) => event.args.depositor)).to.deep.equal([address]);
      expect(deposits.length).to.be.greaterThan(3);
    } finally {
      await proxy.close();
    }
  });
});

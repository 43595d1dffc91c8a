import { expect } from "chai";
import { Wallet } from "ethers";
import { DatabaseSync } from "node:sqlite";
import { changeNoteOf, namePublicSignals, refundAnchorOf, refundPrecommitmentOf } from "../../sdk/index.js";
import { SNARK_SCALAR_FIELD } from "../../sdk/crypto/field.js";
import { FacilitatorClient, noteFromWire, noteToWire, type WireNote } from "../../sdk/client/facilitator-client.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { deposit as depositInPool } from "../indexer/helpers/pool-actions.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";
import { startRecordingProxy } from "./helpers/recording-proxy.js";

/** Every number in `text` (decimal, or 0x-hex in 32-byte words) that is a field element: what could open a refund anchor. */
function fieldValuesIn(text: string): bigint[] {
  const values = new Set<bigint>();
  for (const [number] of text.matchAll(/0x[0-9a-fA-F]+|[0-9]+/g)) {
    const words = number.startsWith("0x") ? (number.slice(2).match(/.{1,64}/g) ?? []).map((word) => `0x${word}`) : [number];
    for (const word of words) {
      const value = BigInt(word);
      if (value > 0n && value < SNARK_SCALAR_FIELD) values.add(value);
    }
  }
  return [...values];
}

/** Every row of every table of the relayer's SQLite store, as text: all that the operator keeps. */
function relayerDatabaseText(dbPath: string): string {
  const database = new DatabaseSync(dbPath, { readOnly: true });
  try {
    const tables = database.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    const asText = (_key: string, value: unknown) =>
      typeof value === "bigint" ? value.toString() : value instanceof Uint8Array ? `0x${Buffer.from(value).toString("hex")}` : value;
    return tables.map(({ name }) => JSON.stringify(database.prepare(`SELECT * FROM "${name}"`).all(), asText)).join("\n");
  } finally {
    database.close();
  }
}

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

  it("agent-proved: from every request body it received, every row of its database and the pool's public events, the operator cannot single out the agent's deposit among 10; the request shape of 12f9cbe, which sent the refund precommitment, singles it out", async function () {
    const { networkHelpers, ethers } = world.chain.connection;
    for (let i = 0; i < 9; i++) {
      const other = Wallet.createRandom().connect(ethers.provider);
      await networkHelpers.setBalance(other.address, 10n ** 18n);
      await depositInPool(world.chain, other, 8800 + i);
    }
    const proxy = await startRecordingProxy(world.relayer.url, (_path, answer) => answer);
    try {
      const { agent, deposit, address } = await world.newAgent(world.chain.depositors.dave, 1_000_000n, { facilitator: new FacilitatorClient(proxy.url) });
      expect((await agent.fetch(world.sellers.v2.resourceUrl)).status).to.equal(200);

      // All the operator holds: what reached it, and what it kept.
      const received = [...proxy.requests.map((request) => `${request.url}\n${request.body}`), relayerDatabaseText(world.relayer.config.dbPath)].join("\n");
      for (const secret of [deposit.note.nullifier, deposit.note.secret, deposit.note.label, refundPrecommitmentOf(deposit.note)]) expect(received).to.not.contain(secret.toString());

      const settle = proxy.requests.find((request) => request.url === "/api/facilitator/settle-x402-proof")!;
      const body = JSON.parse(settle.body) as { proof: { publicSignals: string[] } };
      const { refundAnchor } = namePublicSignals(body.proof.publicSignals);
      const pool = world.chain.facilitator.privacyPool;
      const deposits = await pool.queryFilter(pool.filters.Deposited());
      expect(deposits.length).to.be.at.least(10);
      const openedBy = (text: string) => {
        const values = fieldValuesIn(text);
        return deposits.filter((event) => values.some((value) => refundAnchorOf(event.args.label, value) === refundAnchor));
      };
      expect(openedBy(received).map((event) => event.args.depositor), "deposits singled out").to.deep.equal([]);

      // 12f9cbe's settle-x402-proof carried the refund precommitment its SDK derived from the note: it opens the anchor.
      const shapeOf12f9cbe = JSON.stringify({ ...body, refundPrecommitment: refundPrecommitmentOf(deposit.note).toString() });
      expect(openedBy(shapeOf12f9cbe).map((event) => event.args.depositor)).to.deep.equal([address]);
    } finally {
      await proxy.close();
    }
  });
});

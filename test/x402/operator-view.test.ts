import { expect } from "chai";
import { Wallet } from "ethers";
import { DatabaseSync } from "node:sqlite";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { proveLocally } from "../../sdk/agent/index.js";
import { changeNoteOf, namePublicSignals, nullifierHashOf, refundAnchorOf, refundPrecommitmentOf } from "../../sdk/index.js";
import { sharedProver } from "../../sdk/prover/index.js";
import { decodeXPayment, eip3009Types, paymentHeaders, readPaymentRequired, selectExactRequirement } from "../../sdk/x402/index.js";
import { PAYER_KEY_SECRET, relayerKey, treasury } from "../relayer/helpers/relayer-harness.js";
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
describe("what the operator, or a proxy that logs request bodies, learns from a detour payment, and what the operator can move of it (docs/design.md 9)", function () {
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

  // docs/design.md 9, "Who can move the agent's money": every key, secret and row the relayer has, tried against the
  // price the pool authorized while the seller has not taken it yet.
  it("agent-proved, in flight: with every key, secret and row of the relayer, the operator moves nothing but the seller's price to the seller", async function () {
    const { deposit } = await world.newAgent(world.chain.depositors.erin, 1_000_000n);
    const required = await readPaymentRequired(await fetch(world.sellers.v2.resourceUrl));
    const accepts = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
    const terms = { accepts, resource: required!.x402Version === 2 ? required!.resource : undefined, acceptNotPrivate: true };
    const { addressBook, usdc, entrypoint, privacyPool } = world.chain.facilitator;
    const { body } = await proveLocally({
      facilitator: new FacilitatorClient(world.relayer.url),
      prover: sharedProver(),
      note: deposit.note,
      expected: { route: "settle-x402", withdrawnValue: grossForNet(world.price, 500n), feeBps: 500n, processooor: addressBook.entrypoint, recipient: accepts.payTo, accepted: accepts },
      fields: terms,
    });
    const settled = await world.relayer.post("/api/facilitator/settle-x402-proof", body);
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    const nullifierHash = nullifierHashOf(deposit.note.nullifier);

    // What the operator holds: its keys and secret, and the lease's row with the payment it built.
    const lease = (await world.relayer.relayer.store.getLease(nullifierHash))!;
    const { payload } = decodeXPayment(lease.payment!.xPayment);
    const { authorization, signature } = payload;
    // Its secret (PAYER_KEY_SECRET) signs as a key too: no key that holds the agent's money derives from it any more.
    const operatorKeys = [relayerKey, treasury, new Wallet(PAYER_KEY_SECRET)].map((key) => key.connect(world.provider));
    const pool = await privacyPool.getAddress();
    const poolBefore = await usdc.balanceOf(pool);
    const withAuthorization = (to: string, sig: string, sender = operatorKeys[0]!) =>
      usdc
        .connect(sender)
        ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
          pool, to, authorization.value, authorization.validAfter, authorization.validBefore, authorization.nonce, sig,
        );
    for (const key of operatorKeys) {
      // The pool's "signature" for a transfer to the operator's own address, and the key's own signature as the pool's.
      await expect(withAuthorization(key.address, signature)).to.be.revertedWithCustomError(usdc, "InvalidSignature");
      const typed = { from: pool, to: key.address, value: authorization.value, validAfter: authorization.validAfter, validBefore: authorization.validBefore, nonce: authorization.nonce };
      const own = await key.signTypedData(await usdc.eip712Domain().then(({ name, version, chainId, verifyingContract }) => ({ name, version, chainId, verifyingContract })), eip3009Types("TransferWithAuthorization"), typed);
      await expect(withAuthorization(key.address, own)).to.be.revertedWithCustomError(usdc, "InvalidSignature");
    }
    // The derived payer key of the note holds nothing: the pool is the payer. Returning the price early is refused.
    expect(await usdc.balanceOf(operatorKeys[2]!.address)).to.equal(0n);
    const transfer = { payTo: authorization.to, value: authorization.value, validAfter: authorization.validAfter, validBefore: authorization.validBefore };
    await expect(entrypoint.connect(operatorKeys[0]!).refundAuthorization(usdc, nullifierHash, transfer, lease.payment!.refundAnchor!)).to.be.revertedWithCustomError(
      entrypoint,
      "PaymentNotExpired",
    );
    expect(await usdc.balanceOf(pool)).to.equal(poolBefore);
    for (const key of operatorKeys) expect(await usdc.balanceOf(key.address)).to.equal(0n);

    // The seller, with the payment the agent was answered, takes exactly its price from the pool.
    const sellerBefore = await world.usdcBalance(accepts.payTo);
    const paid = await fetch(world.sellers.v2.resourceUrl, { headers: paymentHeaders(settled.body.xPayment as string) });
    expect(paid.status).to.equal(200);
    expect(await world.usdcBalance(accepts.payTo)).to.equal(sellerBefore + world.price);
    expect(await usdc.balanceOf(pool)).to.equal(poolBefore - world.price);
  });
});

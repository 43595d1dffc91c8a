import http from "node:http";
import { expect } from "chai";
import { toBeHex, Wallet } from "ethers";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { recoverNotes, returnUnusedPayment, X402AgentError } from "../../sdk/agent/index.js";
import { noteToWire, type SettleX402Answer } from "../../sdk/client/facilitator-client.js";
import { setTimeout as sleep } from "node:timers/promises";
import { createNote, deriveChangeSecrets, deriveRefundSecrets, nullifierHashOf, type Note } from "../../sdk/index.js";
import type { SweepRecord } from "../../relayer/store/relayer-store.js";
import { sweepExpiredPayers } from "../../relayer/x402/payer-sweep.js";
import { listenLocal } from "../../x402-peers/local-server.js";
import { readPaymentRequired, selectExactRequirement } from "../../sdk/x402/payment-required.js";
import { decodeXPayment, encodeXPayment, paymentHeaders } from "../../sdk/x402/index.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { relayerKey, treasury } from "../relayer/helpers/relayer-harness.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { startPaymentWorld, type PaymentWorld, type Seller } from "./helpers/payment-world.js";
import { expectAbsentFrom } from "./helpers/absent-from.js";
import { startRedirector } from "./helpers/redirector.js";
import { sellerSettlement } from "./helpers/seller-settlement.js";

const TAKE_BPS = 500n;
const SETTLE_X402 = "/api/facilitator/settle-x402";

describe("the main job: an agent pays x402 sellers privately through settle-x402", function () {
  let world: PaymentWorld;
  const gross = () => grossForNet(world.price, TAKE_BPS);

  before(async function () {
    world = await startPaymentWorld();
  });
  after(async function () {
    await world?.close();
  });

  /** A custodial payment: the agent sends the note, the relayer proves (test/x402/non-custodial.test.ts has the other mode). */
  async function paysPrivately(seller: Seller, payTo: string) {
    const { agent, events, address, deposit, vault } = await world.newAgent(world.chain.depositors.alice, 2_000_000n, { custody: "custodial" });
    const before = {
      seller: await world.usdcBalance(payTo),
      treasury: await world.accruedFees(treasury.address),
      pool: await world.poolBalance(),
    };

    const response = await agent.fetch(seller.resourceUrl);

    expect(response.status).to.equal(200);
    expect(await response.json()).to.deep.equal(WEATHER_REPORT);
    expect(events.map((event) => event.step)).to.deep.equal(["payment-required", "probe", "settled", "paid"]);
    const probe = events[1] as Extract<(typeof events)[number], { step: "probe" }>;
    expect(probe.verdict).to.equal("compatible");
    const settled = (events[2] as Extract<(typeof events)[number], { step: "settled" }>).answer as SettleX402Answer;
    expect(settled).to.deep.include({ amount: world.price.toString(), gross: gross().toString(), fee: (gross() - world.price).toString() });
    expect(settled.privacy).to.deep.include({ private: false, minimumForPrivacy: 30 });
    expect(settled.privacy.custody.mode).to.equal("custodial");

    // The seller got its price from the pool itself, the treasury the take (accrued in the pool), the notes lost the
    // gross; nothing stopped anywhere between the pool and the seller.
    expect(settled.payer).to.equal(world.chain.facilitator.addressBook.privacyPool);
    expect(await world.usdcBalance(payTo)).to.equal(before.seller + world.price);
    expect(await world.accruedFees(treasury.address)).to.equal(before.treasury + gross() - world.price);
    expect(await world.poolBalance()).to.equal(before.pool - gross());
    // The change note was saved, the spent note marked.
    const unspent = await world.unspentNotes(vault);
    expect(unspent.map((note) => note.value)).to.deep.equal([deposit.note.value - gross()]);

    for (const txHash of [settled.fundingTxHash, sellerSettlement(response)]) await expectAbsentFrom(world.provider, txHash, address);
    return settled;
  }

  it("pays a v2 reference seller with the note: 402, probe, settle-x402, PAYMENT-SIGNATURE, 200 with the data", async function () {
    const settled = await paysPrivately(world.sellers.v2, world.payTo.v2);
    expect(settled.x402Version).to.equal(2);
  });

  it("pays a v1-shaped seller with the note through X-PAYMENT, 200 with the data", async function () {
    const settled = await paysPrivately(world.sellers.v1, world.payTo.v1);
    expect(settled.x402Version).to.equal(1);
  });

  it("pays with the change note of a payment a moment ago, waiting for the indexer to read it", async function () {
    const { agent, vault } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
    expect((await agent.fetch(world.sellers.v2.resourceUrl)).status).to.equal(200);
    const [change] = await world.unspentNotes(vault);
    const missing = await rejectionOf(world.indexer.client.stateProof(change!.commitment));
    expect(missing, "the indexer has not read the change note yet").to.have.property("code", "DEPOSIT_NOT_FOUND");

    const indexerCatchesUp = sleep(500).then(() => world.syncIndexer());
    expect((await agent.fetch(world.sellers.v1.resourceUrl)).status).to.equal(200);
    await indexerCatchesUp;
    expect((await world.unspentNotes(vault)).map((note) => note.value)).to.deep.equal([1_000_000n - 2n * gross()]);
  });

  describe("idempotency of settle-x402 (docs/api.md 3.2)", function () {
    let note: Note;
    let body: Record<string, unknown>;

    before(async function () {
      const { deposit } = await world.newAgent(world.chain.depositors.bob, 3_000_000n);
      note = deposit.note;
      const required = await readPaymentRequired(await fetch(world.sellers.v2.resourceUrl));
      const accepted = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset });
      const change = deriveChangeSecrets(note);
      body = {
        accepts: accepted,
        resource: required!.x402Version === 2 ? required!.resource : undefined,
        serviceDeposit: noteToWire(note),
        nextNullifier: change.nullifier.toString(),
        nextSecret: change.secret.toString(),
        acceptNotPrivate: true,
      };
    });

    it("answers a retry after a lost response with the identical xPayment, withdrawing once", async function () {
      const pool = await world.poolBalance();
      const first = await world.relayer.post(SETTLE_X402, body);
      expect(first.status, JSON.stringify(first.body)).to.equal(200);
      const retry = await world.relayer.post(SETTLE_X402, body);
      expect(retry.status).to.equal(200);
      expect(retry.body).to.deep.equal({ ...first.body, replayed: true, privacy: retry.body.privacy });
      expect(first.body.replayed).to.equal(false);

      // The replayed payment still pays the seller, from the pool: the note's gross left it once.
      const paid = await fetch(world.sellers.v2.resourceUrl, {
        headers: { "PAYMENT-SIGNATURE": first.body.xPayment as string, "X-PAYMENT": first.body.xPayment as string },
      });
      expect(paid.status).to.equal(200);
      expect(await world.poolBalance()).to.equal(pool - gross());
    });

    it("refuses the leased note for a payment on other terms, as already spent", async function () {
      const otherSeller = { ...(body.accepts as object), payTo: Wallet.createRandom().address };
      const { status, body: answer } = await world.relayer.post(SETTLE_X402, { ...body, accepts: otherSeller });
      expect(status).to.equal(409);
      expect(answer).to.deep.include({ settled: false, code: "ALREADY_SPENT" });
    });

    it("settles 20 concurrent identical requests with exactly one withdrawal, all answering the same payment", async function () {
      const { deposit } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
      const change = deriveChangeSecrets(deposit.note);
      const concurrent = {
        ...body,
        serviceDeposit: noteToWire(deposit.note),
        nextNullifier: change.nullifier.toString(),
        nextSecret: change.secret.toString(),
      };
      const pool = await world.poolBalance();
      const answers = await Promise.all(Array.from({ length: 20 }, () => world.relayer.post(SETTLE_X402, concurrent)));

      for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(new Set(answers.map((answer) => answer.body.xPayment)).size).to.equal(1);
      expect(new Set(answers.map((answer) => answer.body.fundingTxHash)).size).to.equal(1);
      expect(answers.filter((answer) => answer.body.replayed === false)).to.have.length(1);
      // One take accrued; the price waits in the pool for the seller, under one authorization.
      expect(await world.poolBalance()).to.equal(pool - (gross() - world.price));
      const pool_ = world.chain.facilitator.privacyPool;
      const withdrawals = await pool_.queryFilter(pool_.filters.Withdrawn());
      const spends = withdrawals.filter((event) => event.args.spentNullifierHash === nullifierHashOf(deposit.note.nullifier));
      expect(spends).to.have.length(1);
    });
  });

  it("is refused by the seller's unmodified facilitators for any transfer the pool did not authorize, and taken once", async function () {
    const { deposit } = await world.newAgent(world.chain.depositors.erin, 1_000_000n);
    for (const [seller, payTo] of [[world.sellers.v2, world.payTo.v2], [world.sellers.v1, world.payTo.v1]] as const) {
      const required = await readPaymentRequired(await fetch(seller.resourceUrl));
      const accepted = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
      const { note } = (await world.newAgent(world.chain.depositors.erin, 1_000_000n)).deposit;
      const { status, body } = await world.relayer.post(SETTLE_X402, {
        accepts: accepted,
        resource: required!.x402Version === 2 ? required!.resource : undefined,
        serviceDeposit: noteToWire(note),
        acceptNotPrivate: true,
      });
      expect(status, JSON.stringify(body)).to.equal(200);
      const genuine = decodeXPayment(body.xPayment as string);
      const { authorization } = genuine.payload;
      const altered = [
        { validBefore: String(BigInt(authorization.validBefore) + 1n) },
        { validAfter: String(BigInt(authorization.validAfter) - 1n) },
        { nonce: toBeHex(nullifierHashOf(deposit.note.nullifier), 32) },
      ];
      const before = await world.usdcBalance(payTo);
      for (const change of altered) {
        const forged = encodeXPayment({ ...genuine, payload: { ...genuine.payload, authorization: { ...authorization, ...change } } });
        const refused = await fetch(seller.resourceUrl, { headers: paymentHeaders(forged) });
        expect(refused.status, JSON.stringify(change)).to.equal(402);
      }
      expect(await world.usdcBalance(payTo)).to.equal(before);
      expect((await fetch(seller.resourceUrl, { headers: paymentHeaders(body.xPayment as string) })).status).to.equal(200);
      expect((await fetch(seller.resourceUrl, { headers: paymentHeaders(body.xPayment as string) })).status, "the same payment again").to.equal(402);
      expect(await world.usdcBalance(payTo)).to.equal(before + world.price);
    }
  });

  it("refuses below the privacy minimum without acceptNotPrivate, touching no note", async function () {
    const { agent, vault, deposit } = await world.newAgent(world.chain.depositors.dave, 1_000_000n, { acceptNotPrivate: false });
    const refused = await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl));
    expect(refused).to.have.property("code", "PRIVACY_NOT_ACKNOWLEDGED");
    expect(refused.message).to.contain("NOT private");
    expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
    expect(await world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(deposit.note.nullifier))).to.equal(false);
  });

  describe("the probe (docs/api.md 1, step 1)", function () {
    it("refuses a seller that answers x402 402s but never reads a payment, before touching a note", async function () {
      // A paywall that copies a reference seller's 402 and ignores every payment header.
      const unpaid = await fetch(world.sellers.v1.resourceUrl);
      const body402 = await unpaid.text();
      const deaf = await listenLocal((_request: http.IncomingMessage, response: http.ServerResponse) => {
        response.writeHead(402, { "content-type": "application/json" }).end(body402);
      });
      try {
        const { agent, vault, deposit, events } = await world.newAgent(world.chain.depositors.erin, 1_000_000n);
        const refused = await rejectionOf(agent.fetch(`${deaf.url}/weather`));
        expect(refused).to.be.instanceOf(X402AgentError);
        expect(refused).to.have.property("code", "SELLER_INCOMPATIBLE");
        expect(events.map((event) => event.step)).to.deep.equal(["payment-required", "probe"]);
        expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
      } finally {
        await deaf.close();
      }
    });

    it("refuses a generic 402 paywall as not x402, paying nothing", async function () {
      const { agent, vault, deposit } = await world.newAgent(world.chain.depositors.erin, 1_000_000n);
      const refused = await rejectionOf(agent.fetch(world.plain402.url));
      expect(refused).to.have.property("code", "NOT_X402");
      expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
    });
  });

  describe("redirects: the agent pays only the origin it was asked for", function () {
    it("refuses a redirect to another origin's seller before anything is paid, and follows one within the origin", async function () {
      const trusted = await startRedirector(world.sellers.v2.resourceUrl);
      try {
        const { agent, vault, deposit, events } = await world.newAgent(world.chain.depositors.dave, 1_000_000n, { custody: "custodial" });
        const sellerBefore = await world.usdcBalance(world.payTo.v2);

        // The URL the user trusts answers 302 to a seller of another origin: refused, naming it; no note moved.
        const refused = await rejectionOf(agent.fetch(trusted.elsewhereUrl));
        expect(refused).to.be.instanceOf(X402AgentError);
        expect(refused).to.have.property("code", "CROSS_ORIGIN_REDIRECT");
        expect(refused.message).to.contain(new URL(world.sellers.v2.resourceUrl).origin);
        expect(events).to.deep.equal([]);
        expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
        expect(await world.usdcBalance(world.payTo.v2)).to.equal(sellerBefore);
        expect(agent.committedAtomic).to.equal(0n);

        // Within the trusted origin the redirect is followed, the 402 there paid, the paid request followed again.
        const paid = await agent.fetch(trusted.movedUrl);
        expect(paid.status).to.equal(200);
        expect(await paid.json()).to.deep.equal(WEATHER_REPORT);
        expect(await world.usdcBalance(world.payTo.v2)).to.equal(sellerBefore + world.price);
        expect((await world.unspentNotes(vault)).map((note) => note.value)).to.deep.equal([deposit.note.value - gross()]);
      } finally {
        await trusted.close();
      }
    });
  });

  it("recovers from the seed alone the latest unspent change note after three payments", async function () {
    const { agent, vault, seed } = await world.newAgent(world.chain.depositors.alice, 1_000_000n);
    for (const seller of [world.sellers.v2, world.sellers.v1, world.sellers.v2]) {
      expect((await agent.fetch(seller.resourceUrl)).status).to.equal(200);
      await world.syncIndexer();
    }
    const recovered = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed });
    expect(recovered.unspent).to.deep.equal(await world.unspentNotes(vault));
    expect(recovered.unspent[0]?.value).to.equal(1_000_000n - 3n * gross());
    expect(recovered.chains[0]?.history.map((step) => step.kind)).to.deep.equal(["deposited", "withdrawn", "withdrawn", "withdrawn"]);
  });

  describe("an authorization the seller never used", function () {
    /** A settle-x402 of `amount` whose authorization has the shortest window and is never shown to the seller. */
    async function abandonedPayment(amount: bigint) {
      const { deposit, seed } = await world.newAgent(world.chain.depositors.bob, amount + 1_000_000n);
      const required = await readPaymentRequired(await fetch(world.sellers.v2.resourceUrl));
      const accepted = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
      const { status, body } = await world.relayer.post(SETTLE_X402, {
        accepts: { ...accepted, amount: amount.toString(), maxTimeoutSeconds: 20 },
        serviceDeposit: noteToWire(deposit.note),
        acceptNotPrivate: true,
      });
      expect(status, JSON.stringify(body)).to.equal(200);
      const nullifierHash = nullifierHashOf(deposit.note.nullifier);
      return { note: deposit.note, seed, nullifierHash, payer: body.payer as string, validBefore: body.validBefore as number, xPayment: body.xPayment as string };
    }

    const sweep = async () =>
      (await sweepExpiredPayers({ store: world.relayer.relayer.store, chain: world.relayer.relayer.chain })).records;

    it("comes back, whatever its size, as the agent's refund note by a relaying key with no role, which recovery finds and the agent can spend", async function () {
      const refund = 1_200_000n;
      const { note, seed, nullifierHash, payer } = await abandonedPayment(refund);
      const small = await abandonedPayment(60_000n);
      const { entrypoint, privacyPool } = world.chain.facilitator;
      for (const role of [await entrypoint.DEFAULT_ADMIN_ROLE(), await entrypoint.POSTMAN_ROLE()]) expect(await entrypoint.hasRole(role, relayerKey.address)).to.equal(false);
      expect(payer).to.equal(await privacyPool.getAddress());
      const poolHolds = await world.usdcBalance(payer);
      // The chain's clock decides expiry, and it may run behind the relayer's wall clock (a restored snapshot
      // turns it back): move it past both authorizations.
      const { time } = world.chain.connection.networkHelpers;
      await time.increaseTo(Math.max(await time.latest(), small.validBefore) + 1);

      const ofThese = (records: SweepRecord[]) => records.filter((record) => [nullifierHash, small.nullifierHash].includes(record.nullifierHash));
      const records = ofThese(await sweep());
      expect(records.map(({ payer, outcome, amount }) => ({ payer, outcome, amount }))).to.have.deep.members([
        { payer, outcome: "deposited", amount: refund },
        { payer, outcome: "deposited", amount: 60_000n },
      ]);
      expect(await world.usdcBalance(payer), "nothing moved: the price never left the pool").to.equal(poolHolds);
      expect(ofThese(await sweep()), "a second sweep leaves them alone").to.deep.equal([]);

      // The refund note keeps the label of the note that paid, and its commitment holds the refund secrets.
      const refunded = (await entrypoint.queryFilter(entrypoint.filters.RefundDeposited(payer))).find((event) => event.args.originNullifierHash === nullifierHash);
      const refundNote = createNote(refund, note.label, deriveRefundSecrets(note), "refund");
      expect(refundNote.commitment).to.equal(refunded!.args.commitment);
      const recovered = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed });
      const refundChain = recovered.chains.find((chain) => chain.origin === "refund");
      expect(refundChain?.latest).to.deep.equal(refundNote);
      expect(recovered.unspent).to.deep.include(refundNote);

      await world.syncIndexer();
      const spent = await world.relayer.post("/api/withdraw", { ...noteToWire(refundNote), recipient: world.payTo.v2 });
      expect(spent.status, JSON.stringify(spent.body)).to.equal(200);
    });
    it("comes back by the agent's own call from what it was answered, with no key or row of the operator's, and only once", async function () {
      const { note, seed, nullifierHash, payer, validBefore, xPayment } = await abandonedPayment(300_000n);
      const { time } = world.chain.connection.networkHelpers;
      await time.increaseTo(Math.max(await time.latest(), validBefore) + 1);
      // Any account with gas sends it, straight to the chain: the refund note is the agent's, whoever sends.
      const anyone = world.chain.depositors.dave;
      const { addressBook } = world.chain.facilitator;
      const poolHolds = await world.usdcBalance(payer);
      await returnUnusedPayment({ signer: anyone, addressBook, xPayment });
      expect(await world.usdcBalance(payer), "nothing moved: the price never left the pool").to.equal(poolHolds);
      const recovered = await recoverNotes({ provider: world.provider, addressBook, seed });
      expect(recovered.unspent).to.deep.include(createNote(300_000n, note.label, deriveRefundSecrets(note), "refund"));
      const again = await returnUnusedPayment({ signer: anyone, addressBook, xPayment }).then(() => "returned twice", (error: Error) => error.message);
      expect(again).to.not.equal("returned twice");

      // The operator's sweep finds it returned by someone else and records it so.
      const records = (await sweep()).filter((record) => record.nullifierHash === nullifierHash);
      expect(records.map(({ outcome, amount }) => ({ outcome, amount }))).to.deep.equal([{ outcome: "deposited", amount: 300_000n }]);
    });
  });
});

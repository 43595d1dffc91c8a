import { expect } from "chai";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { proveLocally, recoverNotes } from "../../sdk/agent/index.js";
import { FacilitatorClient, noteToWire } from "../../sdk/client/facilitator-client.js";
import { toBeHex } from "ethers";
import { createNote, deriveChangeSecrets, deriveRefundSecrets, nullifierHashOf, type Note } from "../../sdk/index.js";
import { sharedProver } from "../../sdk/prover/index.js";
import { sweepExpiredPayers } from "../../relayer/x402/payer-sweep.js";
import { readPaymentRequired, selectExactRequirement } from "../../sdk/x402/payment-required.js";
import type { Seller } from "../../x402-peers/seller.js";
import { deployForwarder, forwardAhead } from "../relayer/helpers/forwarder.js";
import { manualMining } from "../relayer/helpers/manual-mining.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";

const SETTLE_X402 = "/api/facilitator/settle-x402";
const SETTLE_X402_PROOF = "/api/facilitator/settle-x402-proof";
/** The relayer's take in the payment world ("paid" pricing). */
const TAKE_BPS = 500n;
/** 0.05 USDC: far below the 1 USDC minimum deposit that used to strand such refunds at the payer. */
const PRICE = 50_000n;

describe("refunds: a payment the seller refused comes home as a note of the agent's seed", function () {
  let world: PaymentWorld;
  /** A seller whose x402 facilitator verifies payments but has no gas to settle them: it refuses after funding. */
  let seller: Seller;

  before(async function () {
    world = await startPaymentWorld({ price: PRICE });
    seller = await world.startBrokeSeller();
  });
  after(async function () {
    await seller?.close();
    await world?.close();
  });

  /** The seller's chosen entry, as the SDK's agent reads it from the 402. */
  async function sellerTerms() {
    const required = await readPaymentRequired(await fetch(seller.resourceUrl));
    const accepts = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
    return { accepts, resource: required!.x402Version === 2 ? required!.resource : undefined };
  }

  interface FundedPayment {
    settled: { status: number; body: Record<string, unknown> };
    /** The note that paid; its seed's refund secrets open the refund note. */
    deposit: Note;
    seed: string;
  }

  /** Whether the token says the pool's authorization of the note's payment was used (its nonce is the nullifier hash). */
  async function authorizationUsed(deposit: Note): Promise<boolean> {
    const { usdc, privacyPool } = world.chain.facilitator;
    return usdc.authorizationState(await privacyPool.getAddress(), toBeHex(nullifierHashOf(deposit.nullifier), 32));
  }

  /**
   * The seller's facilitator refuses the payment: the seller answers without the resource, and the price stays in the
   * pool, whose authorization nobody used. Returns the spent note's nullifier hash.
   */
  async function expectRefusedAndHeld({ settled, deposit }: FundedPayment): Promise<bigint> {
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    expect(settled.body.payer).to.equal(await world.chain.facilitator.privacyPool.getAddress());
    const pool = await world.poolBalance();
    const xPayment = settled.body.xPayment as string;
    const refused = await fetch(seller.resourceUrl, { headers: { "PAYMENT-SIGNATURE": xPayment, "X-PAYMENT": xPayment } });
    expect(refused.ok, `seller answered ${refused.status}`).to.equal(false);
    expect(await world.poolBalance()).to.equal(pool);
    expect(await authorizationUsed(deposit)).to.equal(false);
    return nullifierHashOf(deposit.nullifier);
  }

  /**
   * From the seed alone: a refund note of exactly the amount under the label of the note that paid, unspent, in the
   * state tree, and spendable under the ASP root that approves that label: no decision of its own.
   */
  async function expectRefundNote({ deposit, seed }: FundedPayment): Promise<void> {
    const recovered = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed });
    const refundChain = recovered.chains.find((chain) => chain.origin === "refund");
    expect(refundChain?.status).to.equal("unspent");
    const refundNote = createNote(PRICE, deposit.label, deriveRefundSecrets(deposit), "refund");
    expect(refundChain?.latest).to.deep.equal(refundNote);
    expect(recovered.unspent).to.deep.include(refundNote);

    expect((await world.indexer.client.stateProof(refundNote.commitment)).witness.index).to.be.a("number");
    expect((await world.indexer.client.aspProof(deposit.label)).witness.root).to.equal(await world.chain.facilitator.entrypoint.latestRoot());
  }

  /** A payment to the reference seller whose facilitator settles: the seller uses the pool's authorization. */
  async function usedPayment(): Promise<FundedPayment> {
    const { deposit, seed } = await world.newAgent(world.chain.depositors.erin, 1_000_000n);
    const required = await readPaymentRequired(await fetch(world.sellers.v2.resourceUrl));
    const accepts = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
    const settled = await world.relayer.post(SETTLE_X402, {
      accepts,
      resource: required!.x402Version === 2 ? required!.resource : undefined,
      serviceDeposit: noteToWire(deposit.note),
      acceptNotPrivate: true,
    });
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    const xPayment = settled.body.xPayment as string;
    expect((await fetch(world.sellers.v2.resourceUrl, { headers: { "PAYMENT-SIGNATURE": xPayment } })).status).to.equal(200);
    expect(await authorizationUsed(deposit.note)).to.equal(true);
    return { settled, deposit: deposit.note, seed };
  }

  /** `from` (any address: a sanctioned one, say) sends `value` to `to`. */
  async function strangerSends(to: string, value: bigint): Promise<void> {
    const stranger = world.chain.depositors.erin;
    const usdc = world.chain.facilitator.usdc;
    await (await usdc.mint(stranger, value)).wait();
    await (await usdc.connect(stranger).transfer(to, value)).wait();
  }

  /** A payment the relayer proves from the agent's note (custodial), as the agent SDK asks it to. */
  async function custodialPayment(): Promise<FundedPayment> {
    const { deposit, seed } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
    const change = deriveChangeSecrets(deposit.note);
    const settled = await world.relayer.post(SETTLE_X402, {
      ...(await sellerTerms()),
      serviceDeposit: noteToWire(deposit.note),
      nextNullifier: change.nullifier.toString(),
      nextSecret: change.secret.toString(),
      acceptNotPrivate: true,
    });
    return { settled, deposit: deposit.note, seed };
  }

  /**
   * A custodial payment whose relay a stranger copies from the mempool and sends through a contract of its own, mined
   * first: the relayer's transaction reverts, and the pool's authorization is made by the stranger's. The agent still
   * gets the payment (and the same one on a retry).
   */
  async function forwardedPayment(): Promise<FundedPayment> {
    const { deposit, seed } = await world.newAgent(world.chain.depositors.bob, 1_000_000n);
    const stranger = world.chain.depositors.alice;
    const forwarder = await deployForwarder(stranger);
    const mining = manualMining(world.chain, () => world.relayer);
    const body = { ...(await sellerTerms()), serviceDeposit: noteToWire(deposit.note), acceptNotPrivate: true };
    await mining.setAutomine(false);
    let settled: FundedPayment["settled"];
    try {
      const answering = world.relayer.post(SETTLE_X402, body);
      const ours = await mining.pendingRelay(deposit.note);
      const copy = await forwardAhead(forwarder, stranger, ours);
      await mining.mine();
      expect((await world.provider.getTransactionReceipt(ours.hash))?.status).to.equal(0);
      await world.indexer.indexer.sync.catchUp();
      settled = await answering;
      expect(settled.body).to.deep.include({ settled: true, fundingTxHash: copy.hash, replayed: false });
    } finally {
      await mining.setAutomine(true);
    }
    const retried = await world.relayer.post(SETTLE_X402, body);
    expect(retried.body).to.deep.include({ settled: true, xPayment: settled.body.xPayment, replayed: true });
    return { settled, deposit: deposit.note, seed };
  }

  /** A payment whose withdrawal the agent proved (non-custodial): the relayer knows only the proof's refund anchor. */
  async function provenPayment(): Promise<FundedPayment> {
    const { deposit, seed } = await world.newAgent(world.chain.depositors.dave, 1_000_000n);
    const terms = { ...(await sellerTerms()), acceptNotPrivate: true };
    const facilitator = new FacilitatorClient(world.relayer.url);
    const entrypoint = await world.chain.facilitator.entrypoint.getAddress();
    const { body } = await proveLocally({
      facilitator,
      prover: sharedProver(),
      note: deposit.note,
      expected: { route: "settle-x402", withdrawnValue: grossForNet(PRICE, TAKE_BPS), feeBps: TAKE_BPS, processooor: entrypoint, accepted: terms.accepts },
      fields: terms,
    });
    // Nothing that opens the anchor: the request's retry key is random, derived from nothing of the note's.
    expect(body).to.not.have.property("refundPrecommitment");
    expect(body.retryKey).to.match(/^0x[0-9a-f]{64}$/);
    const settled = await world.relayer.post(SETTLE_X402_PROOF, body);
    return { settled, deposit: deposit.note, seed };
  }

  // Every case in one test: the sweep waits for the chain's clock to pass each authorization, and a clock moved past
  // one payment's window would already have passed a later payment's (the relayer sets windows by wall clock).
  it("returns exactly each unused authorization after expiry as a note under its origin's label, and nothing a stranger sent", async function () {
    const payments = [await custodialPayment(), await provenPayment(), await forwardedPayment()];
    const used = await usedPayment();
    const anonymityBefore = (await world.indexer.client.status()).anonymitySet;
    const unused: bigint[] = [];
    for (const payment of payments) unused.push(await expectRefusedAndHeld(payment));
    const usedNote = nullifierHashOf(used.deposit.nullifier);
    const ofThese = (records: { nullifierHash: bigint }[]) => records.filter((record) => [...unused, usedNote].includes(record.nullifierHash));

    // A stranger sends the pool more than a payment: it may neither enter the pool as anyone's note nor make a refund fail.
    await strangerSends(await world.chain.facilitator.privacyPool.getAddress(), PRICE + 1n);
    const poolBefore = await world.poolBalance();

    // Nothing is returned while the seller could still use the authorization.
    const sweep = async () =>
      (await sweepExpiredPayers({ store: world.relayer.relayer.store, chain: world.relayer.relayer.chain })).records;
    expect(ofThese(await sweep())).to.deep.equal([]);

    const { time } = world.chain.connection.networkHelpers;
    const lastValidBefore = Math.max(...[...payments, used].map(({ settled }) => settled.body.validBefore as number));
    await time.increaseTo(Math.max(await time.latest(), lastValidBefore) + 1);
    const swept = await sweep();
    for (const nullifierHash of unused) expect(swept.find((record) => record.nullifierHash === nullifierHash)).to.deep.include({ outcome: "deposited", amount: PRICE });
    expect(swept.find((record) => record.nullifierHash === usedNote)).to.deep.include({ outcome: "used", amount: 0n, depositTxHash: null });
    // The prices never left the pool: returning them moves nothing, and the stranger's units stay outside every note.
    expect(await world.poolBalance()).to.equal(poolBefore);

    // Each refund is a leaf under its origin's label, recovered from the seed; no refund note exists for the used
    // payment, and refunds make no depositor.
    await world.syncIndexer();
    for (const payment of payments) await expectRefundNote(payment);
    const ofUsed = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed: used.seed });
    expect(ofUsed.chains.filter((chain) => chain.origin === "refund")).to.deep.equal([]);
    expect((await world.indexer.client.status()).anonymitySet).to.equal(anonymityBefore);
    // A second sweep finds the refunds recorded and moves nothing.
    expect(ofThese(await sweep())).to.deep.equal([]);
  });

  it("starts a payment's window on the chain's clock when the chain runs ahead of the relayer's, so the seller can still use it", async function () {
    // A local node stamps each block at least a second after the last: a burst of transactions puts it ahead.
    const { time } = world.chain.connection.networkHelpers;
    await time.increaseTo(Math.floor(Date.now() / 1000) + 3_600);
    const { settled } = await usedPayment();
    expect(settled.body.validBefore as number).to.be.greaterThan(await time.latest());
  });
});

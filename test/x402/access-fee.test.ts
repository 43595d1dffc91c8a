import { expect } from "chai";
import { poolAnswersFor } from "../helpers/pool-authorization.js";
import { gasCostInUsdc } from "../../lib/gas-cost.js";
import { grossForNet, parseUsdc } from "../../relayer/pricing/pricing.js";
import type { Signer } from "ethers";
import { proveLocally, X402AgentError, type AgentEvent } from "../../sdk/agent/index.js";
import { FacilitatorClient, noteToWire, type AccessFeeProofAnswer, type SettleX402Answer, type SettleX402ProofAnswer } from "../../sdk/client/facilitator-client.js";
import { changeNoteOf, deriveChangeSecrets, nullifierHashOf, type Note, type NoteSecrets } from "../../sdk/index.js";
import { sharedProver } from "../../sdk/prover/index.js";
import { readPaymentRequired, selectExactRequirement } from "../../sdk/x402/payment-required.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { depositNote } from "../contracts/helpers/notes.js";
import { TEST_USDC_PER_ETH, treasury } from "../relayer/helpers/relayer-harness.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { expectAbsentFrom } from "./helpers/absent-from.js";
import { sellerSettlement } from "./helpers/seller-settlement.js";
import { startPaymentWorld, type PaymentWorld, type Seller } from "./helpers/payment-world.js";

const TAKE_BPS = 500n;
/** The standard tier's access fee on a test network (docs/api.md 8). */
const ACCESS_FEE = 1_000n;

type Step<S extends AgentEvent["step"]> = Extract<AgentEvent, { step: S }>;

describe("access fees paid out of the note: no address of the depositor appears with its nullifier hash (docs/sdk.md \"Access fees\")", function () {
  let world: PaymentWorld;
  const gross = () => grossForNet(world.price, TAKE_BPS);

  before(async function () {
    world = await startPaymentWorld({ accessFeeEnforced: true });
  });
  after(async function () {
    await world?.close();
  });

  /** The AccessFeePaid events of a transaction, as the entrypoint emitted them. */
  async function accessFeesPaidIn(txHash: string) {
    const { entrypoint } = world.chain.facilitator;
    const receipt = await world.provider.getTransactionReceipt(txHash);
    return receipt!.logs
      .filter((log) => log.address.toLowerCase() === world.chain.facilitator.addressBook.entrypoint.toLowerCase())
      .map((log) => entrypoint.interface.parseLog(log))
      .filter((event) => event?.name === "AccessFeePaid")
      .map((event) => event!.args.toArray());
  }

  /**
   * One paid request of `seller` by an agent whose only note is unauthorized: the SDK pays the fee out of the note
   * (the pool is the payer and the change note the one authorized), then the seller out of that change note. Nothing
   * of the depositor's address is in the fee's transaction, the payment's, or the seller's.
   */
  async function paysFeeThenSeller(paying: Note, depositor: string, seller: Seller, payTo: string, events: AgentEvent[], pay: () => Promise<Response>) {
    const before = {
      seller: await world.usdcBalance(payTo),
      treasury: await world.usdcBalance(treasury.address),
      takes: await world.accruedFees(treasury.address),
      pool: await world.poolBalance(),
    };
    const seen = events.length;

    const response = await world.whileIndexerFollows(pay);

    expect(response.status).to.equal(200);
    expect(await response.json()).to.deep.equal(WEATHER_REPORT);
    const steps = events.slice(seen);
    const fee = (steps.find((event) => event.step === "access-fee-paid") as Step<"access-fee-paid">).answer as AccessFeeProofAnswer;
    const settled = (steps.find((event) => event.step === "settled") as Step<"settled">).answer as SettleX402Answer | SettleX402ProofAnswer;
    // Paid mode: the note pays the fee and the gas of its relay, all to the treasury, which covers what the relaying
    // key spent on it at the relayer's ETH price.
    const withdrawn = BigInt(fee.amount);
    expect(withdrawn).to.be.greaterThan(ACCESS_FEE);
    const relay = await world.provider.getTransactionReceipt(fee.txHash);
    expect(gasCostInUsdc(relay!.gasUsed, relay!.gasPrice, parseUsdc(TEST_USDC_PER_ETH))).to.be.at.most(withdrawn - ACCESS_FEE);
    const change = changeNoteOf(paying, withdrawn);
    expect(fee).to.deep.include({ settled: true, authorized: true, fee: "0", authorizedNullifierHash: nullifierHashOf(change.nullifier).toString() });
    expect(await accessFeesPaidIn(fee.txHash)).to.deep.equal([
      [world.chain.facilitator.addressBook.privacyPool, nullifierHashOf(change.nullifier), world.asset, withdrawn, treasury.address],
    ]);

    expect(await world.usdcBalance(payTo)).to.equal(before.seller + world.price);
    // The access fee is paid to the treasury; the payment's take accrues to it in the pool.
    expect(await world.usdcBalance(treasury.address)).to.equal(before.treasury + withdrawn);
    expect(await world.accruedFees(treasury.address)).to.equal(before.takes + gross() - world.price);
    expect(await world.poolBalance()).to.equal(before.pool - withdrawn - gross());
    for (const txHash of [fee.txHash, settled.fundingTxHash, sellerSettlement(response)]) await expectAbsentFrom(world.provider, txHash, depositor);
    return { change, withdrawn, steps: steps.map((event) => event.step) };
  }

  it("custodial: pays the fee out of the deposit itself, then the seller out of the change note it authorized", async function () {
    const { agent, events, address, deposit, vault } = await world.newAgent(world.chain.depositors.alice, 2_000_000n, { custody: "custodial" });

    const { change, withdrawn, steps } = await paysFeeThenSeller(deposit.note, address, world.sellers.v2, world.payTo.v2, events, () =>
      agent.fetch(world.sellers.v2.resourceUrl),
    );

    // The relayer's settle refused the note (402), the agent proved the fee itself, and the relayer settled the change note.
    expect(steps).to.deep.equal(["payment-required", "probe", "proved", "access-fee-paid", "settled", "paid"]);
    expect((await world.unspentNotes(vault)).map((note) => note.value)).to.deep.equal([change.value - gross()]);
    expect(agent.committedAtomic).to.equal(withdrawn + gross());
  });

  it("non-custodial: each payment out of a note the relayer cannot know is authorized pays the fee first", async function () {
    const { agent, events, address, deposit, vault } = await world.newAgent(world.chain.depositors.bob, 2_000_000n, { custody: "non-custodial" });

    const first = await paysFeeThenSeller(deposit.note, address, world.sellers.v2, world.payTo.v2, events, () => agent.fetch(world.sellers.v2.resourceUrl));
    // The relayer never learnt the second change note's nullifier hash, so that note pays the fee again.
    const [afterFirst] = await world.unspentNotes(vault);
    const second = await paysFeeThenSeller(afterFirst!, address, world.sellers.v1, world.payTo.v1, events, () => agent.fetch(world.sellers.v1.resourceUrl));

    const payment = ["payment-required", "probe", "proved", "access-fee-paid", "proved", "settled", "paid"];
    expect([first.steps, second.steps]).to.deep.equal([payment, payment]);
    expect((await world.unspentNotes(vault)).map((note) => note.value)).to.deep.equal([deposit.note.value - first.withdrawn - second.withdrawn - 2n * gross()]);
  });

  it("pays no fee above maxAccessFeeAtomic: refused before anything is proven or spent", async function () {
    const { agent, deposit, vault } = await world.newAgent(world.chain.depositors.carol, 1_000_000n, { custody: "custodial", maxAccessFeeAtomic: ACCESS_FEE - 1n });

    const refused = await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl));

    expect(refused).to.be.instanceOf(X402AgentError);
    expect(refused).to.deep.include({ code: "ACCESS_FEE_REFUSED" });
    expect(refused.message).to.contain(`access fee of ${ACCESS_FEE}`);
    expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
    expect(await world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(deposit.note.nullifier))).to.equal(false);
    expect(agent.committedAtomic).to.equal(0n);
  });

  describe("an authorization stays with the deposit whose fee paid it", function () {
    const SETTLE_X402 = "/api/facilitator/settle-x402";
    const SETTLE_X402_PROOF = "/api/facilitator/settle-x402-proof";

    /** A deposit of 1 USDC from `from` with secrets of its choosing, once the indexer and the ASP know it. */
    const depositWith = async (from: Signer, secrets: NoteSecrets) => {
      const note = await depositNote(world.chain.facilitator, from, 1_000_000n, secrets);
      await world.syncIndexer();
      return note;
    };
    /** Pays `note`'s access fee from `from`'s wallet (Entrypoint.payAccessFee) and records it (authorize). */
    const authorizeFromWallet = async (from: Signer, note: Note) => {
      const { usdc, entrypoint } = world.chain.facilitator;
      await (await usdc.mint(from, ACCESS_FEE)).wait();
      await (await usdc.connect(from).approve(entrypoint, ACCESS_FEE)).wait();
      const paid = await (await entrypoint.connect(from).payAccessFee(usdc, nullifierHashOf(note.nullifier), ACCESS_FEE)).wait();
      const authorized = await world.relayer.post("/api/facilitator/authorize", {
        network: "eip155:31337",
        accessTokenTxHash: paid!.hash,
        nullifierHash: nullifierHashOf(note.nullifier).toString(),
      });
      expect(authorized.status, JSON.stringify(authorized.body)).to.equal(200);
    };
    /** settle-x402's terms for the v2 reference seller, as the SDK reads them from its 402. */
    const sellerTerms = async () => {
      const required = await readPaymentRequired(await fetch(world.sellers.v2.resourceUrl));
      const accepts = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
      return { accepts, resource: required!.x402Version === 2 ? required!.resource : undefined, acceptNotPrivate: true };
    };
    /** A custodial settle-x402 out of `note`, its change note's secrets `change` when given (else derived by the relayer). */
    const settleCustodial = async (note: Note, change?: NoteSecrets) =>
      world.relayer.post(SETTLE_X402, {
        ...(await sellerTerms()),
        serviceDeposit: noteToWire(note),
        ...(change !== undefined && { nextNullifier: change.nullifier.toString(), nextSecret: change.secret.toString() }),
      });
    /** A settle-x402-proof out of `note`, proven here against the relayer's quote as the SDK does. */
    const settleProven = async (note: Note) => {
      const terms = await sellerTerms();
      const { body } = await proveLocally({
        facilitator: new FacilitatorClient(world.relayer.url),
        prover: sharedProver(),
        note,
        expected: { route: "settle-x402", withdrawnValue: gross(), feeBps: TAKE_BPS, processooor: world.chain.facilitator.addressBook.entrypoint, accepted: terms.accepts },
        fields: terms,
      });
      return world.relayer.post(SETTLE_X402_PROOF, body);
    };
    const expectPaid = async (answer: { status: number; body: Record<string, unknown> }) => {
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(await poolAnswersFor(world.chain.facilitator, answer.body.xPayment as string)).to.equal(true);
    };
    /** A proof of `note` refused at its quote with the 402 of docs/api.md 2.6, before anything is proven: the note untouched. */
    const expectProvenRefusedUnspent = async (note: Note) => {
      expect(await rejectionOf(settleProven(note))).to.include({ status: 402, code: "NULLIFIER_NOT_AUTHORIZED" });
      expect(await world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(false);
    };
    /** Refused with the 402 of docs/api.md 2.6, the note untouched: its whole value still in it. */
    const expectRefusedUnspent = async (answer: { status: number; body: Record<string, unknown> }, note: Note) => {
      expect(answer.status, JSON.stringify(answer.body)).to.equal(402);
      expect(answer.body).to.deep.include({ settled: false, code: "NULLIFIER_NOT_AUTHORIZED" });
      expect(await world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(false);
    };

    it("refuses another deposit named as an authorized note's change, and one deposited with its derived change nullifier; the real change notes still pay, custodially (a proof shows no label to carry the fee to)", async function () {
      const attacker = world.chain.depositors.dave;
      const authorized = await depositWith(attacker, { nullifier: 7_001n, secret: 7_002n });
      const other = await depositWith(attacker, { nullifier: 7_011n, secret: 7_012n });
      await authorizeFromWallet(attacker, authorized);

      // The authorized note pays, naming the other deposit's nullifier for its change note: the change's nullifier
      // hash is the other deposit's, which no AccessFeePaid ever named.
      await expectPaid(await settleCustodial(authorized, { nullifier: other.nullifier, secret: 7_099n }));
      await expectRefusedUnspent(await settleCustodial(other), other);
      await expectProvenRefusedUnspent(other);

      // A deposit made with the change nullifier the relayer will derive for an authorized note's change.
      const second = await depositWith(attacker, { nullifier: 7_021n, secret: 7_022n });
      const crafted = await depositWith(attacker, { nullifier: deriveChangeSecrets(second).nullifier, secret: 7_031n });
      await authorizeFromWallet(attacker, second);
      await expectPaid(await settleCustodial(second));
      await expectRefusedUnspent(await settleCustodial(crafted), crafted);

      // The change note the relayer derived keeps its deposit's authorization for a spend that shows its label, a
      // custodial one. A proof shows nothing that links it to its deposit, so the note pays the fee anew to be proven.
      await world.syncIndexer();
      const change = changeNoteOf(second, gross());
      await expectProvenRefusedUnspent(change);
      await expectPaid(await settleCustodial(change));
    });
  });
});

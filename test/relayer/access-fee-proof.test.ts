import { expect } from "chai";
import { parseUsdc } from "../../relayer/pricing/pricing.js";
import { proveLocally } from "../../sdk/agent/index.js";
import { FacilitatorClient, FacilitatorError } from "../../sdk/client/facilitator-client.js";
import {
  changeNoteOf,
  deriveChangeSecrets,
  nullifierHashOf,
  packValueFeeAndDepths,
  unpackValueFeeAndDepths,
  WITHDRAW_PUBLIC_SIGNALS,
  type Note,
} from "../../sdk/index.js";
import { sharedProver } from "../../sdk/prover/index.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { deployForwarder, forwardAhead } from "./helpers/forwarder.js";
import { manualMining } from "./helpers/manual-mining.js";
import { buildRelayerConfig, relayerKey, startRelayer, treasury, type RunningRelayer } from "./helpers/relayer-harness.js";

const QUOTE_ACCESS_FEE = "/api/facilitator/quote-access-fee";
const ACCESS_FEE_PROOF = "/api/facilitator/access-fee-proof";
/** The standard tier's access fee on a test network (docs/api.md 8). */
const ACCESS_FEE = 1_000n;

const changeHashOf = (note: Note) => nullifierHashOf(deriveChangeSecrets(note).nullifier);

describe("relayer: an access fee paid out of the note (quote-access-fee, access-fee-proof)", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  /** The gate on, as the fee needs. */
  let gated: RunningRelayer;
  /** The gate off; the same operator secret, so its quotes are authentic to `gated` too. */
  let open: RunningRelayer;
  let entrypoint: string;
  const notes: Record<"alice" | "bob" | "carol" | "dave" | "erin", Note> = {} as never;

  const usdcBalance = (address: string) => chain.facilitator.usdc.balanceOf(address);
  const quoteRequest = (note: Note, authorizedNullifierHash = changeHashOf(note)) => ({
    nullifierHash: nullifierHashOf(note.nullifier).toString(),
    authorizedNullifierHash: authorizedNullifierHash.toString(),
  });

  /**
   * The access-fee-proof body for `note`, proven here against `relayer`'s quote (default `gated`), as the SDK's agent
   * builds it: withdrawing `withdrawal` from the note (the fee alone unless named).
   */
  async function provenFee(note: Note, relayer = gated, withdrawal = ACCESS_FEE) {
    const authorizedNullifierHash = changeHashOf(note);
    const { body } = await proveLocally({
      facilitator: new FacilitatorClient(relayer.url),
      prover: sharedProver(),
      note,
      expected: { route: "access-fee", withdrawnValue: withdrawal, feeBps: 0n, processooor: entrypoint, recipient: treasury.address, authorizedNullifierHash },
      fields: { authorizedNullifierHash: authorizedNullifierHash.toString(), ...(withdrawal !== ACCESS_FEE && { withdrawnValue: withdrawal.toString() }) },
    });
    return body;
  }

  before(async function () {
    chain = await startLocalChain();
    const { alice, bob, carol, dave } = chain.depositors;
    notes.alice = await deposit(chain, alice, 301, 2_000_000n);
    notes.bob = await deposit(chain, bob, 302, 2_000_000n);
    notes.carol = await deposit(chain, carol, 303, 2_000_000n);
    notes.dave = await deposit(chain, dave, 304, 2_000_000n);
    notes.erin = await deposit(chain, chain.depositors.erin, 305, 10_000_000n);
    indexer = await startIndexer(buildIndexerConfig(chain));
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    await (await chain.facilitator.entrypoint.setAccessFeeTreasury(treasury.address)).wait();
    gated = await startRelayer(buildRelayerConfig(chain, indexer, { accessFeeEnforced: "true" }));
    open = await startRelayer(buildRelayerConfig(chain, indexer));
    entrypoint = chain.facilitator.addressBook.entrypoint;
  });

  after(async function () {
    await open?.stop();
    await gated?.stop();
    await indexer?.stop();
    await chain?.close();
  });

  it("pays the fee out of the note, authorizes the change note it names, and answers a retry from the lease", async function () {
    const body = await provenFee(notes.alice);
    const treasuryBefore = await usdcBalance(treasury.address);

    const paid = await gated.post(ACCESS_FEE_PROOF, body);

    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.deep.include({
      settled: true,
      authorized: true,
      authorizedNullifierHash: changeHashOf(notes.alice).toString(),
      amount: ACCESS_FEE.toString(),
      fee: "0",
      replayed: false,
    });
    expect(await usdcBalance(treasury.address)).to.equal(treasuryBefore + ACCESS_FEE);
    // The change note is authorized: a spend of it is quoted where an unauthorized note gets 402.
    await indexer.indexer.sync.catchUp();
    const changeQuote = await gated.post("/api/facilitator/quote", {
      paymentDetails: { scheme: "exact", payTo: treasury.address, maxAmountRequired: "400000", networkId: "eip155:31337" },
      nullifierHash: changeHashOf(notes.alice).toString(),
    });
    expect(changeQuote.status, JSON.stringify(changeQuote.body)).to.equal(200);

    const retried = await gated.post(ACCESS_FEE_PROOF, body);
    expect(retried.status, JSON.stringify(retried.body)).to.equal(200);
    expect(retried.body).to.deep.include({ replayed: true, txHash: paid.body.txHash });
    expect(await usdcBalance(treasury.address)).to.equal(treasuryBefore + ACCESS_FEE);

    // The note is spent, and its change note needs no fee.
    const again = await gated.post(QUOTE_ACCESS_FEE, quoteRequest(notes.alice, 12_345n));
    expect(again.status).to.equal(409);
    expect(again.body).to.deep.include({ code: "ALREADY_SPENT" });
    const authorizedAgain = await gated.post(QUOTE_ACCESS_FEE, quoteRequest(notes.bob, changeHashOf(notes.alice)));
    expect(authorizedAgain.status).to.equal(400);
    expect(authorizedAgain.body).to.deep.include({ code: "AUTHORIZATION_REJECTED" });
    expect(authorizedAgain.body.error).to.contain("already authorized");
  });

  it("pays and authorizes the named note when a copy of the fee's relay, sent through another contract, is mined first", async function () {
    const stranger = chain.depositors.erin;
    const forwarder = await deployForwarder(stranger);
    const body = await provenFee(notes.dave);
    const treasuryBefore = await usdcBalance(treasury.address);
    const mining = manualMining(chain, () => gated);
    await mining.setAutomine(false);
    let paid: Awaited<ReturnType<typeof gated.post>>;
    let copy: Awaited<ReturnType<typeof forwardAhead>>;
    try {
      const paying = gated.post(ACCESS_FEE_PROOF, body);
      const ours = await mining.pendingRelay(notes.dave);
      copy = await forwardAhead(forwarder, stranger, ours);
      await mining.mine();
      await indexer.indexer.sync.catchUp();
      paid = await paying;
    } finally {
      await mining.setAutomine(true);
    }

    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.deep.include({ settled: true, authorized: true, txHash: copy.hash, authorizedNullifierHash: changeHashOf(notes.dave).toString() });
    // The fee is at the treasury, the rest of the note in its change note, which is authorized.
    expect(await usdcBalance(treasury.address)).to.equal(treasuryBefore + ACCESS_FEE);
    const withdrawn = await chain.facilitator.privacyPool.queryFilter(chain.facilitator.privacyPool.filters.Withdrawn());
    expect(withdrawn.filter((event) => event.args.spentNullifierHash === nullifierHashOf(notes.dave.nullifier)).map((event) => event.transactionHash)).to.deep.equal([copy.hash]);
    await indexer.indexer.sync.catchUp();
    const changeQuote = await gated.post("/api/facilitator/quote", {
      paymentDetails: { scheme: "exact", payTo: treasury.address, maxAmountRequired: "400000", networkId: "eip155:31337" },
      nullifierHash: changeHashOf(notes.dave).toString(),
    });
    expect(changeQuote.status, JSON.stringify(changeQuote.body)).to.equal(200);
  });

  it("in paid mode, pays its relay's gas out of the note: access fees paid again and again out of one note's change notes never cost the operator more gas than they pay", async function () {
    const usdcPerEth = "3000";
    const paid = await startRelayer(buildRelayerConfig(chain, indexer, { accessFeeEnforced: "true", pricingMode: "paid", usdcPerEth }));
    const { provider } = chain.connection.ethers;
    try {
      const treasuryBefore = await usdcBalance(treasury.address);
      const operatorBefore = await provider.getBalance(relayerKey.address);
      let note = notes.erin;
      for (let round = 0; round < 3; round++) {
        // The stranger asks for the least it can: the fee alone, then, when refused, the fee and the relay's gas.
        let body: Awaited<ReturnType<typeof provenFee>>;
        try {
          body = await provenFee(note, paid);
        } catch (error) {
          expect(error).to.be.instanceOf(FacilitatorError);
          expect(error).to.deep.include({ code: "BELOW_FEE_FLOOR" });
          const { body: supported } = await paid.get("/api/facilitator/supported");
          const { floorAtomic } = (supported.pricing as { feeFloor: { floorAtomic: string } }).feeFloor;
          body = await provenFee(note, paid, ACCESS_FEE + BigInt(floorAtomic));
        }
        const answer = await paid.post(ACCESS_FEE_PROOF, body);
        expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
        note = changeNoteOf(note, BigInt(answer.body.amount as string));
        await indexer.indexer.sync.catchUp();
      }
      // Every unit of the note is at the treasury or in the last change note; the gas the relaying key spent on the
      // three relays, at the relayer's own ETH price, is no more than the treasury received.
      const received = (await usdcBalance(treasury.address)) - treasuryBefore;
      expect(note.value + received).to.equal(notes.erin.value);
      const gasWei = operatorBefore - (await provider.getBalance(relayerKey.address));
      const gasUsdc = (gasWei * parseUsdc(usdcPerEth) + 10n ** 18n - 1n) / 10n ** 18n;
      expect(gasUsdc, `gas ${gasUsdc} atomic USDC against fees ${received}`).to.be.at.most(received);
    } finally {
      await paid.stop();
    }
  });

  it("refuses while the gate is off, and a fee that would authorize the note that pays it", async function () {
    const quoted = await open.post(QUOTE_ACCESS_FEE, quoteRequest(notes.bob));
    expect(quoted.status).to.equal(400);
    expect(quoted.body).to.deep.include({ code: "AUTHORIZATION_REJECTED" });
    expect(quoted.body.error).to.contain("does not enforce the access fee");

    const itself = await gated.post(QUOTE_ACCESS_FEE, quoteRequest(notes.bob, nullifierHashOf(notes.bob.nullifier)));
    expect(itself.status).to.equal(400);
    expect(itself.body.error).to.contain("cannot authorize that note");
  });

  describe("access-fee-proof refuses, before anything moves", function () {
    let body: Awaited<ReturnType<typeof provenFee>>;

    before(async function () {
      body = await provenFee(notes.bob);
    });
    afterEach(async function () {
      expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(notes.bob.nullifier)), "the note was spent").to.equal(false);
    });

    it("with the gate off", async function () {
      const refused = await open.post(ACCESS_FEE_PROOF, body);
      expect(refused.status).to.equal(400);
      expect(refused.body).to.deep.include({ settled: false, authorized: false, code: "AUTHORIZATION_REJECTED" });
    });

    it("a quote altered to another fee, take or treasury", async function () {
      for (const altered of [{ withdrawnValue: "999" }, { feeBps: 500 }, { recipient: chain.depositors.carol.address }]) {
        const refused = await gated.post(ACCESS_FEE_PROOF, { ...body, quote: { ...body.quote, ...altered } });
        expect(refused.status, JSON.stringify(altered)).to.equal(400);
        expect(refused.body).to.deep.include({ settled: false, code: "INVALID_REQUEST" });
        expect(refused.body.error).to.contain("not one this facilitator issued, or altered");
      }
    });

    it("a settle's quote as an access fee, an access fee's quote as a settle, and another note to authorize than quoted", async function () {
      const settleQuote = await open.post("/api/facilitator/quote", {
        paymentDetails: { scheme: "exact", payTo: treasury.address, maxAmountRequired: "400000", networkId: "eip155:31337" },
        nullifierHash: nullifierHashOf(notes.carol.nullifier).toString(),
      });
      expect(settleQuote.status, JSON.stringify(settleQuote.body)).to.equal(200);
      const asFee = await gated.post(ACCESS_FEE_PROOF, { ...body, quote: settleQuote.body.quote });
      expect(asFee.body).to.deep.include({ code: "INVALID_REQUEST" });
      expect(asFee.body.error).to.contain("quote.route is settle");

      const paymentDetails = { scheme: "exact", payTo: treasury.address, maxAmountRequired: "400000", networkId: "eip155:31337" };
      const asSettle = await open.post("/api/facilitator/settle-proof", { paymentDetails, quote: body.quote, proof: body.proof });
      expect(asSettle.body).to.deep.include({ settled: false, code: "INVALID_REQUEST" });
      expect(asSettle.body.error).to.contain("quote.route is access-fee");

      const another = await gated.post(ACCESS_FEE_PROOF, { ...body, authorizedNullifierHash: "777" });
      expect(another.body).to.deep.include({ code: "INVALID_REQUEST" });
      expect(another.body.error).to.contain("quote.authorizedNullifierHash");
    });

    it("a proof of a smaller fee than quoted", async function () {
      const packedAt = WITHDRAW_PUBLIC_SIGNALS.indexOf("valueFeeAndDepths");
      const publicSignals = [...body.proof.publicSignals];
      publicSignals[packedAt] = packValueFeeAndDepths({ ...unpackValueFeeAndDepths(BigInt(publicSignals[packedAt]!)), withdrawnValue: ACCESS_FEE - 1n }).toString();
      const refused = await gated.post(ACCESS_FEE_PROOF, { ...body, proof: { ...body.proof, publicSignals } });
      expect(refused.status).to.equal(422);
      expect(refused.body).to.deep.include({ code: "INVALID_PROOF" });
      expect(refused.body.error).to.contain("withdrawnValue");
    });

    it("once the entrypoint's treasury is no longer the relayer's: the relay's simulation says so, at no gas", async function () {
      const { entrypoint: contract } = chain.facilitator;
      await (await contract.setAccessFeeTreasury(chain.depositors.carol.address)).wait();
      try {
        const refused = await gated.post(ACCESS_FEE_PROOF, body);
        expect(refused.status).to.equal(400);
        expect(refused.body).to.deep.include({ settled: false, authorized: false, code: "AUTHORIZATION_REJECTED" });
        expect(refused.body.error).to.contain("access-fee treasury is no longer this facilitator's treasury");
      } finally {
        await (await contract.setAccessFeeTreasury(treasury.address)).wait();
      }
    });
  });
});

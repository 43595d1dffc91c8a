import { readFile } from "node:fs/promises";
import { expect } from "chai";
import { getAddress, type Signer } from "ethers";
import { SupportedResponseSchema } from "../../relayer/schemas/supported.js";
import { FacilitatorClient } from "../../sdk/client/facilitator-client.js";
import { commitmentOf, createNote, deriveChangeSecrets, nullifierHashOf, precommitmentOf, type Note } from "../../sdk/index.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { deployForwarder } from "./helpers/forwarder.js";
import { buildRelayerConfig, serviceDeposit, startRelayer, treasury, type RunningRelayer } from "./helpers/relayer-harness.js";

const payee = "0x000000000000000000000000000000000000bEEF";
const SETTLE = "/api/facilitator/settle";
const VERIFY = "/api/facilitator/verify";

const invoice = (maxAmountRequired: string, payTo = payee) => ({ scheme: "exact", payTo, maxAmountRequired, networkId: "eip155:31337" });

describe("relayer: facilitator API over HTTP against a local chain, real proofs and a running indexer", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let relayer: RunningRelayer;
  const notes: Record<"alice" | "bob" | "carol" | "dave" | "erin", Note> = {} as never;

  const usdcBalance = (address: string) => chain.facilitator.usdc.balanceOf(address);
  const poolBalance = async () => usdcBalance(await chain.facilitator.privacyPool.getAddress());
  const accruedFees = (address: string) => chain.facilitator.privacyPool.accruedFeesOf(address);
  /** The indexer reads what the relayer's transactions changed, as its follow loop would. */
  const sync = () => indexer.indexer.sync.catchUp();

  before(async function () {
    chain = await startLocalChain();
    const { alice, bob, carol, dave, erin } = chain.depositors;
    notes.alice = await deposit(chain, alice, 101, 5_000_000n);
    notes.bob = await deposit(chain, bob, 102, 2_000_000n);
    notes.carol = await deposit(chain, carol, 103, 1_000_000n);
    notes.dave = await deposit(chain, dave, 104, 3_000_000n);
    notes.erin = await deposit(chain, erin, 105, 1_000_000n);
    indexer = await startIndexer(buildIndexerConfig(chain));
    await sync();
    await indexer.indexer.curator.publish();
    await sync();
    relayer = await startRelayer(buildRelayerConfig(chain, indexer, { pricingMode: "paid" }));
  });

  after(async function () {
    await relayer?.stop();
    await indexer?.stop();
    await chain?.close();
  });

  describe("GET /api/facilitator/supported", function () {
    it("reports the API's fields with the live anonymity set, roots and pricing", async function () {
      const { status, body } = await relayer.get("/api/facilitator/supported");
      expect(status).to.equal(200);
      const supported = SupportedResponseSchema.parse(body);
      expect(supported).to.deep.include({ x402Version: 2, version: "1.0.0", status: "pilot", pilotReady: true, customerReady: false });
      expect(supported.privacy.anonymitySet).to.equal(5);
      expect(supported.pilot).to.deep.include({ private: false, anonymitySet: 5, minimumForPrivacy: 30 });
      expect(supported.privacy.latestAspRoot).to.equal(`0x${(await chain.facilitator.entrypoint.latestRoot()).toString(16).padStart(64, "0")}`);
      expect(supported.privacy.indexer).to.deep.equal({ configured: true, reachable: true, synced: true, error: null, leafCount: 5, stateRootMatches: true, aspRootMatches: true });
      expect(supported.blockingReasons.map((reason) => reason.code)).to.have.members([
        "ANONYMITY_SET_BELOW_MINIMUM",
        "PRICING_NOT_ENFORCED",
        "MAINNET_E2E_NOT_VERIFIED",
        "LEGAL_CLEARANCE_NOT_APPROVED",
        "CUSTOMER_PULL_NOT_CONFIRMED",
        "ANONYMITY_SET_PROVENANCE_NOT_VERIFIED",
      ]);
      expect(supported.blockingReasons.every((reason) => reason.blocks.includes("customer"))).to.equal(true);
      expect(supported.supported).to.deep.equal([
        { scheme: "exact", network: "eip155:31337", asset: await chain.facilitator.usdc.getAddress(), symbol: "USDC", decimals: 6 },
      ]);
      expect(supported.pricing.networks["eip155:31337"]?.pricingMode).to.equal("paid");
      expect(supported.pricing.tiers.standard).to.deep.include({ takeBps: 500, takePercent: "5%" });
      expect(supported.pricing.tiers.standard.minimumSettle).to.deep.equal({
        sepoliaAtomic: "40000",
        sepoliaUsdc: "0.040000",
        mainnetAtomic: "20000",
        mainnetUsdc: "0.020000",
      });
      expect(supported.pricing).to.deep.include({ enforced: false, storageBackend: "sqlite", treasury: treasury.address });
      const manifest = JSON.parse(await readFile("sdk/artifacts/manifest.json", "utf8")) as { files: Record<string, string> };
      expect(supported.nonCustodial).to.deep.include({
        enabled: true,
        quote: "POST /api/facilitator/quote",
        settle: "POST /api/facilitator/settle-proof",
        quoteX402: "POST /api/facilitator/quote-x402",
        settleX402: "POST /api/facilitator/settle-x402-proof",
        quoteAccessFee: "POST /api/facilitator/quote-access-fee",
        accessFee: "POST /api/facilitator/access-fee-proof",
        trees: "GET /api/facilitator/trees",
        circuit: "withdraw",
        verificationKeySha256: manifest.files["sdk/artifacts/withdraw.vkey.json"],
        quoteTtlSeconds: 60,
      });
    });
  });

  describe("POST /api/facilitator/verify", function () {
    it("confirms a note that covers the invoice, spending nothing", async function () {
      const { status, body } = await relayer.post(VERIFY, { paymentDetails: invoice("1000000"), serviceDeposit: serviceDeposit(notes.alice) });
      expect(status).to.equal(200);
      expect(body).to.deep.equal({ valid: true, anonymitySet: 5 });
      expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(notes.alice.nullifier))).to.equal(false);
    });

    it("says why a note cannot pay: unknown commitment, or an amount above its value", async function () {
      const neverDeposited = createNote(9_000_000n, notes.alice.label, { nullifier: 1n, secret: 2n });
      const missing = await relayer.post(VERIFY, { paymentDetails: invoice("40000"), serviceDeposit: serviceDeposit(neverDeposited) });
      expect(missing.body).to.deep.include({ valid: false, reason: "deposit_not_found", anonymitySet: 5 });
      const tooMuch = await relayer.post(VERIFY, { paymentDetails: invoice("5000001"), serviceDeposit: serviceDeposit(notes.alice) });
      expect(tooMuch.body).to.deep.include({ valid: false, reason: "invalid_payment_amount" });
    });
  });

  describe("POST /api/facilitator/settle", function () {
    let change: Record<string, string>;
    let firstSettle: Record<string, unknown>;

    it("settles part of a note: exact balances, a change note, and an honest privacy block", async function () {
      const before = { payee: await usdcBalance(payee), treasury: await accruedFees(treasury.address), pool: await poolBalance() };
      const { status, body } = await relayer.post(SETTLE, { paymentDetails: invoice("1000000"), serviceDeposit: serviceDeposit(notes.alice) });
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body).to.deep.include({ settled: true, amount: "1000000", fee: "50000", remainingValue: "4000000" });
      expect(await usdcBalance(payee)).to.equal(before.payee + 950_000n);
      // The take accrues to the treasury in the pool (PrivacyPool.claimFees pays it out).
      expect(await accruedFees(treasury.address)).to.equal(before.treasury + 50_000n);
      expect(await poolBalance()).to.equal(before.pool - 950_000n);

      const expectedChange = deriveChangeSecrets(notes.alice);
      change = body.nextDeposit as Record<string, string>;
      expect(change).to.deep.equal({
        nullifier: expectedChange.nullifier.toString(),
        secret: expectedChange.secret.toString(),
        value: "4000000",
        label: notes.alice.label.toString(),
        commitment: commitmentOf(4_000_000n, notes.alice.label, precommitmentOf(expectedChange)).toString(),
      });
      expect(body.privacy).to.deep.include({ private: false, anonymitySet: 5, minimumForPrivacy: 30 });
      expect(body.proofTimeMs).to.be.a("number").above(0);
      const receipt = await chain.connection.ethers.provider.getTransactionReceipt(body.txHash as string);
      expect(receipt?.status).to.equal(1);
      expect(body.replayed).to.equal(false);
      firstSettle = body;
    });

    it("answers a retry of the same settle from its lease: the same transaction and change note, nothing moved", async function () {
      const before = { payee: await usdcBalance(payee), pool: await poolBalance() };
      const { status, body } = await relayer.post(SETTLE, { paymentDetails: invoice("1000000"), serviceDeposit: serviceDeposit(notes.alice) });
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body).to.deep.equal({ ...firstSettle, replayed: true, privacy: body.privacy });
      expect({ payee: await usdcBalance(payee), pool: await poolBalance() }).to.deep.equal(before);
    });

    it("verifies the settled note as already spent before the indexer has seen the spend", async function () {
      const { status, body } = await relayer.post(VERIFY, { paymentDetails: invoice("40000"), serviceDeposit: serviceDeposit(notes.alice) });
      expect(status).to.equal(200);
      expect(body).to.deep.include({ valid: false, reason: "already_spent" });
      expect((await indexer.client.nullifier(nullifierHashOf(notes.alice.nullifier))).spent, "the indexer lags").to.equal(false);
    });

    it("settles again from the change note it returned", async function () {
      await sync();
      const { status, body } = await relayer.post(SETTLE, { paymentDetails: invoice("2000000"), serviceDeposit: change });
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body).to.deep.include({ settled: true, amount: "2000000", remainingValue: "2000000" });
    });

    it("refuses the spent note for any other payment with the API's guidance", async function () {
      await sync();
      const { status, body } = await relayer.post(SETTLE, { paymentDetails: invoice("1500000"), serviceDeposit: serviceDeposit(notes.alice) });
      expect(status).to.equal(409);
      expect(body).to.deep.include({ settled: false, code: "ALREADY_SPENT" });
      expect(body.error).to.contain("nextDeposit");
    });

    it("answers 400 below the tier's minimum settle, with the math", async function () {
      const { status, body } = await relayer.post(SETTLE, { paymentDetails: invoice("39999"), serviceDeposit: serviceDeposit(notes.erin) });
      expect(status).to.equal(400);
      expect(body).to.deep.include({ settled: false, code: "BELOW_MINIMUM_SETTLE" });
      expect(body.error).to.contain("40000").and.contain("39999 * 500 / 10000 = 1999");
    });

    for (const [what, amount] of [
      ["zero", "0"],
      ["negative", "-1"],
      ["a float", "1.5"],
      ["hex", "0x10"],
      ["a number, not a string", 1000000],
      ["empty", ""],
      ["above 2^128", (1n << 128n).toString()],
    ] as const) {
      it(`rejects an amount that is ${what} as an invalid payment amount`, async function () {
        const { status, body } = await relayer.post(SETTLE, { paymentDetails: { payTo: payee, maxAmountRequired: amount }, serviceDeposit: serviceDeposit(notes.erin) });
        expect(status).to.equal(400);
        expect(body).to.deep.include({ settled: false, code: "INVALID_PAYMENT_AMOUNT" });
      });
    }

    it("rejects a missing amount as an invalid payment amount", async function () {
      const { status, body } = await relayer.post(SETTLE, { paymentDetails: { payTo: payee }, serviceDeposit: serviceDeposit(notes.erin) });
      expect(status).to.equal(400);
      expect(body.code).to.equal("INVALID_PAYMENT_AMOUNT");
    });

    it("answers 404 for a commitment that is not in the state tree", async function () {
      const stranger = createNote(1_000_000n, notes.erin.label, { nullifier: 777n, secret: 888n });
      const { status, body } = await relayer.post(SETTLE, { paymentDetails: invoice("1000000"), serviceDeposit: serviceDeposit(stranger) });
      expect(status).to.equal(404);
      expect(body).to.deep.include({ settled: false, code: "DEPOSIT_NOT_FOUND" });
    });

    it("answers 422 for a note whose fields do not hash to its commitment", async function () {
      const { status, body } = await relayer.post(SETTLE, { paymentDetails: invoice("1000000"), serviceDeposit: { ...serviceDeposit(notes.erin), secret: "12345" } });
      expect(status).to.equal(422);
      expect(body).to.deep.include({ settled: false, code: "INVALID_PROOF" });
    });

    it("rejects unknown fields and bad addresses as invalid requests", async function () {
      const extra = await relayer.post(SETTLE, { paymentDetails: invoice("1000000"), serviceDeposit: serviceDeposit(notes.erin), tip: "1" });
      expect(extra.status).to.equal(400);
      expect(extra.body.code).to.equal("INVALID_REQUEST");
      const badAddress = await relayer.post(SETTLE, { paymentDetails: invoice("1000000", "0x1234"), serviceDeposit: serviceDeposit(notes.erin) });
      expect(badAddress.status).to.equal(400);
      expect(badAddress.body.error).to.contain("paymentDetails.payTo");
    });
  });

  describe("POST /api/withdraw and /api/x402-pay", function () {
    it("withdraws a whole note when amountAtomic is absent, leaving no change note", async function () {
      const recipient = getAddress("0x000000000000000000000000000000000000d00d");
      const { status, body } = await relayer.post("/api/withdraw", { ...serviceDeposit(notes.bob), recipient });
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body).to.deep.include({ withdrawn: true, recipient, amount: "2000000", fee: "100000", remainingValue: "0" });
      expect(body).to.not.have.property("nextDeposit");
      expect(await usdcBalance(recipient)).to.equal(1_900_000n);
    });

    it("pays a provider directly in one call", async function () {
      const provider = getAddress("0x000000000000000000000000000000000000cafe");
      const { status, body } = await relayer.post("/api/x402-pay", { ...serviceDeposit(notes.carol), provider, amountAtomic: "400000" });
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body).to.deep.include({ paid: true, provider, amount: "400000", fee: "20000", remainingValue: "600000" });
      expect(await usdcBalance(provider)).to.equal(380_000n);
    });
  });

  describe("access-fee gate (docs/api.md 3.3) when enforced", function () {
    let gated: RunningRelayer;
    /** Entrypoint.payAccessFee from `from` for the note with `nullifierHash`; returns the transaction's hash. */
    const payFee = async (from: Signer, nullifierHash: bigint, amount: bigint) => {
      const { usdc, entrypoint } = chain.facilitator;
      await (await usdc.mint(from, amount)).wait();
      await (await usdc.connect(from).approve(entrypoint, amount)).wait();
      const tx = await entrypoint.connect(from).payAccessFee(usdc, nullifierHash, amount);
      await tx.wait();
      return tx.hash;
    };
    const authorize = (accessTokenTxHash: string, nullifierHash: bigint) =>
      gated.post("/api/facilitator/authorize", { network: "eip155:31337", accessTokenTxHash, nullifierHash: nullifierHash.toString() });

    before(async function () {
      await (await chain.facilitator.entrypoint.setAccessFeeTreasury(treasury.address)).wait();
      gated = await startRelayer(buildRelayerConfig(chain, indexer, { accessFeeEnforced: "true" }));
    });
    after(async function () {
      await gated?.stop();
    });

    it("answers 402 with the authorization instructions, then settles once the fee is authorized", async function () {
      const refused = await gated.post(SETTLE, { paymentDetails: invoice("1000000"), serviceDeposit: serviceDeposit(notes.dave) });
      expect(refused.status).to.equal(402);
      expect(refused.body).to.deep.include({ settled: false, code: "NULLIFIER_NOT_AUTHORIZED" });
      expect(refused.body.authorization).to.deep.include({ network: "eip155:31337", treasury: treasury.address, requiredFeeAtomic: "1000" });
      expect((refused.body.authorization as { instructions: string }).instructions).to.contain("Entrypoint.payAccessFee");

      const nullifierHash = nullifierHashOf(notes.dave.nullifier);
      const rejected = await authorize(await payFee(chain.depositors.dave, nullifierHash, 999n), nullifierHash);
      expect(rejected.status).to.equal(400);
      expect(rejected.body).to.deep.include({ authorized: false, code: "AUTHORIZATION_REJECTED" });

      const paid = await payFee(chain.depositors.dave, nullifierHash, 1000n);
      expect(await authorize(paid, nullifierHash)).to.deep.equal({ status: 200, body: { authorized: true } });

      const settled = await gated.post(SETTLE, { paymentDetails: invoice("1000000"), serviceDeposit: serviceDeposit(notes.dave) });
      expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    });

    it("holds /api/withdraw and /api/x402-pay to the same gate", async function () {
      const withdraw = await gated.post("/api/withdraw", { ...serviceDeposit(notes.erin), recipient: payee });
      const x402Pay = await gated.post("/api/x402-pay", { ...serviceDeposit(notes.erin), provider: payee, amountAtomic: "400000" });
      for (const answer of [withdraw, x402Pay]) {
        expect(answer.status, JSON.stringify(answer.body)).to.equal(402);
        expect(answer.body).to.deep.include({ settled: false, code: "NULLIFIER_NOT_AUTHORIZED" });
      }
      expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(notes.erin.nullifier))).to.equal(false);
    });

    it("holds a non-custodial quote to the same gate, before anything is proven", async function () {
      const quote = await gated.post("/api/facilitator/quote", { paymentDetails: invoice("400000"), nullifierHash: nullifierHashOf(notes.erin.nullifier).toString() });
      expect(quote.status, JSON.stringify(quote.body)).to.equal(402);
      expect(quote.body).to.deep.include({ code: "NULLIFIER_NOT_AUTHORIZED" });
      expect(quote.body.authorization).to.deep.include({ requiredFeeAtomic: "1000" });
    });

    it("refuses a relay's own take to the treasury as an access fee", async function () {
      const note = await deposit(chain, chain.depositors.alice, 201, 1_000_000n);
      await sync();
      await indexer.indexer.curator.publish();
      await sync();
      const treasuryBefore = await accruedFees(treasury.address);
      const relayed = await relayer.post(SETTLE, { paymentDetails: invoice("500000"), serviceDeposit: serviceDeposit(note) });
      expect(relayed.status, JSON.stringify(relayed.body)).to.equal(200);
      const take = (await accruedFees(treasury.address)) - treasuryBefore;
      expect(take, "the relay paid the treasury more than the access fee").to.be.greaterThan(1000n);

      const claimed = await authorize(relayed.body.txHash as string, nullifierHashOf(notes.erin.nullifier));
      expect(claimed.status).to.equal(400);
      expect(claimed.body).to.deep.include({ authorized: false, code: "AUTHORIZATION_REJECTED" });
      expect(claimed.body.error).to.contain("no Entrypoint.payAccessFee payment");
    });

    it("refuses to start with the gate on when TREASURY_ADDRESS is not the entrypoint's treasury", async function () {
      const elsewhere = buildRelayerConfig(chain, indexer, { accessFeeEnforced: "true", treasury: payee });
      const refused = await startRelayer(elsewhere).then(
        () => expect.fail("the relayer started"),
        (error: unknown) => error as Error,
      );
      expect(refused.message).to.contain("is not the entrypoint's access-fee treasury");
    });

    it("authorizes each note that one transaction pays the access fee of, each once, and no other", async function () {
      const { usdc, entrypoint } = chain.facilitator;
      const [first, second] = [await deposit(chain, chain.depositors.alice, 202, 1_000_000n), await deposit(chain, chain.depositors.bob, 203, 1_000_000n)];
      const hashes = [first, second].map((note) => nullifierHashOf(note.nullifier));
      // A contract pays both fees in one transaction: two AccessFeePaid events, the contract as payer of each.
      const forwarder = await deployForwarder(chain.depositors.alice);
      await (await usdc.mint(forwarder, 2_000n)).wait();
      const [usdcAddress, entrypointAddress] = [await usdc.getAddress(), await entrypoint.getAddress()];
      const treasuryBefore = await usdcBalance(treasury.address);
      const paid = await forwarder.forward(
        [usdcAddress, entrypointAddress, entrypointAddress],
        [
          usdc.interface.encodeFunctionData("approve", [entrypointAddress, 2_000n]),
          ...hashes.map((hash) => entrypoint.interface.encodeFunctionData("payAccessFee", [usdcAddress, hash, 1_000n])),
        ],
      );
      await paid.wait();
      expect(await usdcBalance(treasury.address)).to.equal(treasuryBefore + 2_000n);

      for (const hash of hashes) expect(await authorize(paid.hash, hash), `note ${hash}`).to.deep.equal({ status: 200, body: { authorized: true } });
      // Again: already recorded, nothing more. A note the transaction does not name gets nothing from it.
      expect(await authorize(paid.hash, hashes[0]!)).to.deep.equal({ status: 200, body: { authorized: true } });
      const unnamed = await authorize(paid.hash, nullifierHashOf(notes.erin.nullifier));
      expect(unnamed.body).to.deep.include({ authorized: false, code: "AUTHORIZATION_REJECTED" });
      for (const hash of hashes) {
        const quoted = await gated.post("/api/facilitator/quote", { paymentDetails: invoice("400000"), nullifierHash: hash.toString() });
        expect(quoted.status, JSON.stringify(quoted.body)).to.equal(200);
      }
    });

    it("refuses a claim of another note's payment, and accepts it for the note it names", async function () {
      const carols = nullifierHashOf(notes.carol.nullifier);
      const paid = await payFee(chain.depositors.carol, carols, 1000n);

      const stolen = await authorize(paid, nullifierHashOf(notes.erin.nullifier));
      expect(stolen.status).to.equal(400);
      expect(stolen.body.error).to.contain("pays the access fee of another note");
      expect(await authorize(paid, carols)).to.deep.equal({ status: 200, body: { authorized: true } });
    });
  });

  describe("agent registry (prototype)", function () {
    let agentNote: Note;
    const registration = (name: string) => ({
      name,
      publicKey: `0x02${"11".repeat(32)}`,
      ownerWallet: chain.depositors.erin.address,
      perTransactionLimitAtomic: "500000",
      dailyLimitAtomic: "800000",
      providerWhitelist: [payee],
      categories: ["data"],
    });
    const register = async (name: string) => {
      const { status, body } = await relayer.post("/api/agent/register", registration(name));
      expect(status).to.equal(201);
      return { id: body.id as string, agentKey: body.agentKey as string, body };
    };
    const withKey = (agentKey: string | undefined, init: RequestInit = {}): RequestInit => ({
      ...init,
      headers: { "content-type": "application/json", ...(agentKey === undefined ? {} : { "x-agent-key": agentKey }) },
    });
    const settleAs = (agentKey: string | undefined, body: Record<string, unknown>) =>
      relayer.request(SETTLE, withKey(agentKey, { method: "POST", body: JSON.stringify(body) }));
    const lookUp = (id: string, agentKey?: string) => relayer.request(`/api/agent/register?id=${id}`, withKey(agentKey));

    before(async function () {
      agentNote = await deposit(chain, chain.depositors.carol, 106, 1_000_000n);
      await sync();
      await indexer.indexer.curator.publish();
      await sync();
    });

    it("registers an agent, answering its key once, and refuses a settle above its limit without spending", async function () {
      const { id, agentKey, body } = await register("research-bot");
      expect(id).to.match(/^agent_[0-9a-f]{16}$/);
      expect(agentKey).to.match(/^ak_[0-9a-f]{64}$/);
      expect(body).to.deep.include({ ownerWallet: chain.depositors.erin.address, spend: { totalAtomic: "0", todayAtomic: "0", transactionCount: 0 } });

      const overLimit = await settleAs(agentKey, { paymentDetails: invoice("600000"), serviceDeposit: serviceDeposit(notes.erin), agentId: id, category: "data" });
      expect(overLimit.status).to.equal(403);
      expect(overLimit.body).to.deep.include({ settled: false, code: "AGENT_LIMIT_EXCEEDED" });
      expect(overLimit.body.error).to.contain("per-transaction limit");
      const unknown = await relayer.get("/api/agent/register?id=agent_0000000000000000");
      expect(unknown.status).to.equal(404);
      expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(notes.erin.nullifier))).to.equal(false);
    });

    it("refuses a settle naming an agentId without that agent's key, before anything is spent", async function () {
      const victim = await register("victim-bot");
      const other = await register("other-bot");
      const request = { paymentDetails: invoice("300000"), serviceDeposit: serviceDeposit(agentNote), agentId: victim.id, category: "data" };
      for (const [what, agentKey] of [["no key", undefined], ["another agent's key", other.agentKey], ["a forged key", `ak_${"0".repeat(64)}`]] as const) {
        const { status, body } = await settleAs(agentKey, request);
        expect(status, what).to.equal(401);
        expect(body, what).to.deep.include({ settled: false, code: "AGENT_UNAUTHORIZED" });
        expect(body.error, what).to.contain("X-Agent-Key");
      }
      expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(agentNote.nullifier))).to.equal(false);
      expect((await lookUp(victim.id, victim.agentKey)).body.spend).to.deep.equal({ totalAtomic: "0", todayAtomic: "0", transactionCount: 0 });
    });

    it("shows an agent's owner and spend only with its key: the list and a keyless lookup show neither", async function () {
      const { id, agentKey } = await register("private-bot");
      // Through the SDK's client, which sends the key it was given as X-Agent-Key.
      const client = new FacilitatorClient(relayer.url, 120_000, agentKey);
      const settled = await client.settle({ paymentDetails: invoice("300000"), serviceDeposit: serviceDeposit(agentNote), agentId: id, category: "data" });
      expect(settled).to.deep.include({ settled: true, amount: "300000" });

      const full = await lookUp(id, agentKey);
      expect(full.status).to.equal(200);
      expect(full.body).to.deep.include({
        id,
        ownerWallet: chain.depositors.erin.address,
        spend: { totalAtomic: "300000", todayAtomic: "300000", transactionCount: 1 },
      });
      const keyless = await lookUp(id);
      expect(keyless.status).to.equal(200);
      expect(keyless.body).to.deep.include({ id, name: "private-bot", prototype: true });
      expect(keyless.body).to.not.have.any.keys("ownerWallet", "spend");
      const list = (await relayer.get("/api/agent/register")).body.agents as Record<string, unknown>[];
      expect(list.map((agent) => agent.id)).to.include(id);
      for (const agent of list) expect(agent).to.not.have.any.keys("ownerWallet", "spend");
      expect(JSON.stringify(list)).to.not.contain(chain.depositors.erin.address.slice(2).toLowerCase()).and.not.contain(chain.depositors.erin.address.slice(2));

      const wrongKey = await lookUp(id, (await register("another-bot")).agentKey);
      expect(wrongKey.status).to.equal(401);
      expect(wrongKey.body).to.deep.include({ code: "AGENT_UNAUTHORIZED" });
      expect(wrongKey.body).to.not.have.any.keys("ownerWallet", "spend");
    });
  });

  describe("a cold indexer", function () {
    it("refuses to settle with the API's guidance to run a sync", async function () {
      const cold = await startIndexer(buildIndexerConfig(chain));
      const coldRelayer = await startRelayer(buildRelayerConfig(chain, cold));
      try {
        const { status, body } = await coldRelayer.post(SETTLE, { paymentDetails: invoice("1000000"), serviceDeposit: serviceDeposit(notes.erin) });
        expect(status).to.equal(503);
        expect(body).to.deep.include({ settled: false, code: "INDEXER_COLD" });
        expect(body.error).to.contain("sync");
      } finally {
        await coldRelayer.stop();
        await cold.stop();
      }
    });
  });
});

import { expect } from "chai";
import { poolAnswersFor } from "../helpers/pool-authorization.js";
import { Wallet, ZeroAddress } from "ethers";
import { depositNote, PaymentNotAcceptedError, X402AgentError, type X402AgentOptions } from "../../sdk/agent/index.js";
import { FacilitatorClient, FacilitatorError, noteToWire, type SupportedAnswer } from "../../sdk/client/facilitator-client.js";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { grossForNet } from "../../sdk/fees/relay-fee.js";
import { missingDomainMessage } from "../../sdk/x402/eip712-domain.js";
import { caip2NetworkOf, v1NetworkOf } from "../../sdk/x402/networks.js";
import { readPaymentRequired } from "../../sdk/x402/payment-required.js";
import { startReferenceFacilitator, type ReferenceFacilitator } from "../../x402-peers/reference-facilitator.js";
import { startSeller, type Seller, type SellerOptions } from "../../x402-peers/seller.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";

const SETTLE_X402 = "/api/facilitator/settle-x402";
const TAKE_BPS = 500n;

const values = (notes: Note[]) => notes.map((note) => note.value).sort((a, b) => (a < b ? -1 : 1));

describe("settle-x402 pre-flight and the agent's limits: nothing leaves a note the seller would refuse", function () {
  let world: PaymentWorld;
  const closers: Array<{ close(): Promise<void> }> = [];

  before(async function () {
    world = await startPaymentWorld();
  });
  after(async function () {
    await Promise.all(closers.map((server) => server.close()));
    await world?.close();
  });

  /** A reference seller of the world's USDC on its chain, verified by `facilitatorUrl` (the world's by default). */
  async function seller(options: Partial<SellerOptions> = {}): Promise<Seller> {
    const started = await startSeller({
      facilitatorUrl: world.x402Facilitator.url,
      x402Version: 2,
      network: caip2NetworkOf(world.chainId),
      payTo: Wallet.createRandom().address,
      asset: world.asset,
      amountAtomic: world.price.toString(),
      ...options,
    });
    closers.push(started);
    return started;
  }

  /** An agent with one 1 USDC note; `untouched()` checks on chain and in its vault that the note never moved. */
  async function agentWithNote(options: Partial<X402AgentOptions> = {}) {
    const agent = await world.newAgent(world.chain.depositors.alice, 1_000_000n, options);
    const pool = await world.poolBalance();
    const untouched = async () => {
      expect(await world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(agent.deposit.note.nullifier))).to.equal(false);
      expect(await world.poolBalance(), "pool balance").to.equal(pool);
      expect(await world.unspentNotes(agent.vault)).to.deep.equal([agent.deposit.note]);
    };
    return { ...agent, untouched };
  }

  /** settle-x402 called directly with `entry` for a fresh note; checks that the note did not move. */
  async function settleDirectly(entry: Record<string, unknown>) {
    const { deposit, untouched } = await agentWithNote();
    const answer = await world.relayer.post(SETTLE_X402, { accepts: entry, serviceDeposit: noteToWire(deposit.note), acceptNotPrivate: true });
    await untouched();
    return answer;
  }

  /** The seller's entry as its 402 offers it. */
  async function entryOf(target: Seller): Promise<Record<string, unknown>> {
    const required = await readPaymentRequired(await fetch(target.resourceUrl));
    return required!.accepts[0] as Record<string, unknown>;
  }

  it("says the window range and the take in supported", async function () {
    const { body } = await world.relayer.get("/api/facilitator/supported");
    expect(body.settleX402).to.deep.include({ takeBps: 500, minimumMaxTimeoutSeconds: 20, maximumMaxTimeoutSeconds: 3600 });
  });

  it("(a) refuses a seller whose window is 5 s before proving: the agent gets a 400 naming the field and the numbers", async function () {
    const { agent, untouched } = await agentWithNote();
    const refused = await rejectionOf(agent.fetch((await seller({ maxTimeoutSeconds: 5 })).resourceUrl));
    expect(refused).to.be.instanceOf(FacilitatorError);
    expect(refused).to.include({ status: 400, code: "INVALID_REQUEST" });
    expect(refused.message).to.contain("accepts.maxTimeoutSeconds is 5 s").and.to.contain("at least 20 s").and.to.contain("Nothing was spent");
    await untouched();
  });

  it("refuses a window above the 1-hour ceiling", async function () {
    const entry = { ...(await entryOf(world.sellers.v2)), maxTimeoutSeconds: 7200 };
    const { status, body } = await settleDirectly(entry);
    expect(status).to.equal(400);
    expect(body.error).to.contain("accepts.maxTimeoutSeconds is 7200 s, longer than this facilitator's ceiling of 3600 s");
  });

  it("(b) refuses an entry whose extra.name is not the token's EIP-712 domain name", async function () {
    const { agent, untouched } = await agentWithNote();
    const refused = await rejectionOf(agent.fetch((await seller({ assetDomain: { name: "USD Coin", version: "2" } })).resourceUrl));
    expect(refused).to.include({ status: 400, code: "INVALID_REQUEST" });
    expect(refused.message).to.contain('name "USD Coin", version "2"').and.to.contain('signs under name "USDC", version "2"');
    await untouched();
  });

  describe("(c) an entry that names no EIP-712 domain: one rule in the SDK and the relayer", function () {
    it("the agent refuses a v2 seller's `extra: {}` before probing", async function () {
      const { agent, untouched, events } = await agentWithNote();
      const refused = await rejectionOf(agent.fetch((await seller({ assetDomain: null })).resourceUrl));
      expect(refused).to.be.instanceOf(X402AgentError);
      expect(refused).to.have.property("code", "NO_USABLE_ENTRY");
      expect(refused.message).to.contain(missingDomainMessage({ asset: world.asset }));
      expect(events).to.deep.equal([]);
      await untouched();
    });

    it("the relayer refuses a v1 entry without `extra` with the same rule", async function () {
      const v1 = await seller({ x402Version: 1, network: v1NetworkOf(world.chainId)!, assetDomain: null });
      const entry = await entryOf(v1);
      expect(entry).to.not.have.property("extra");
      const { status, body } = await settleDirectly(entry);
      expect(status).to.equal(400);
      expect(body.error).to.contain(missingDomainMessage({ asset: world.asset }));
    });
  });

  it("refuses a payTo that is the zero address", async function () {
    const { status, body } = await settleDirectly({ ...(await entryOf(world.sellers.v2)), payTo: ZeroAddress });
    expect(status).to.equal(400);
    expect(body.error).to.contain("accepts.payTo is the zero address");
  });

  it("(d) refuses a price above maxPaymentAtomic (default 0.1 USDC) before the probe", async function () {
    const { agent, untouched, events } = await agentWithNote();
    const refused = await rejectionOf(agent.fetch((await seller({ amountAtomic: "100001" })).resourceUrl));
    expect(refused).to.be.instanceOf(X402AgentError);
    expect(refused).to.have.property("code", "PRICE_ABOVE_MAXIMUM");
    expect(refused.message).to.contain("asks 100001 atomic USDC, above this agent's maxPaymentAtomic of 100000");
    expect(events.map((event) => event.step)).to.deep.equal(["payment-required"]);
    await untouched();
  });

  it("stops at budgetAtomic: the second payment is refused before anything moves", async function () {
    const gross = grossForNet(world.price, TAKE_BPS);
    const { agent, vault } = await world.newAgent(world.chain.depositors.bob, 1_000_000n, { budgetAtomic: gross + gross / 2n });
    expect((await agent.fetch(world.sellers.v2.resourceUrl)).status).to.equal(200);
    const [change] = await world.unspentNotes(vault);
    const pool = await world.poolBalance();
    const refused = await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl));
    expect(refused).to.have.property("code", "BUDGET_EXHAUSTED");
    expect(await world.poolBalance()).to.equal(pool);
    expect(await world.unspentNotes(vault)).to.deep.equal([change]);
  });

  it("passes agentId, so the registry's per-transaction limit applies", async function () {
    const registered = await world.relayer.post("/api/agent/register", {
      name: "capped agent",
      publicKey: `0x02${"22".repeat(32)}`,
      ownerWallet: Wallet.createRandom().address,
      perTransactionLimitAtomic: (world.price - 1n).toString(),
      dailyLimitAtomic: "10000000",
    });
    expect(registered.status, JSON.stringify(registered.body)).to.equal(201);
    const { agent, untouched } = await agentWithNote({
      agentId: registered.body.id as string,
      facilitator: new FacilitatorClient(world.relayer.url, undefined, registered.body.agentKey as string),
    });
    const refused = await rejectionOf(agent.fetch(world.sellers.v2.resourceUrl));
    expect(refused).to.include({ code: "AGENT_LIMIT_EXCEEDED", status: 403 });
    await untouched();
  });

  describe("note choice by gross (price + take)", function () {
    const price = 1_950_000n;
    let expensive: Seller;

    before(async function () {
      expensive = await seller({ amountAtomic: price.toString() });
    });

    /** An agent holding notes of 2 and 5 USDC from one seed. */
    async function agentWithTwoNotes(options: Partial<X402AgentOptions> = {}) {
      const { agent, vault, seed, deposit } = await world.newAgent(world.chain.depositors.carol, 2_000_000n, { maxPaymentAtomic: price, ...options });
      const wallet = world.chain.depositors.carol;
      await (await world.chain.facilitator.usdc.mint(wallet, 5_000_000n)).wait();
      const five = await depositNote({ signer: wallet, addressBook: world.chain.facilitator.addressBook, value: 5_000_000n, seed });
      await vault.save(five.note);
      await world.syncIndexer();
      return { agent, vault, two: deposit.note, five: five.note };
    }

    it("pays a 1.95 USDC price from the 5 USDC note, since the 2 USDC note cannot cover 1.95 + the 5% take", async function () {
      const { agent, vault, two } = await agentWithTwoNotes();
      expect((await agent.fetch(expensive.resourceUrl)).status).to.equal(200);
      expect(values(await world.unspentNotes(vault))).to.deep.equal([two.value, 5_000_000n - grossForNet(price, TAKE_BPS)]);
    });

    /** A facilitator whose supported states no take: the agent expects to pay the price alone. */
    class NoTakeStated extends FacilitatorClient {
      override async supported(): Promise<SupportedAnswer> {
        const { settleX402: _, ...rest } = await super.supported();
        return rest as SupportedAnswer;
      }
    }

    it("tries the next note when the facilitator finds the first too small (a facilitator whose supported states no take)", async function () {
      const { agent, vault, two } = await agentWithTwoNotes({ facilitator: new NoTakeStated(world.relayer.url), custody: "custodial" });
      expect((await agent.fetch(expensive.resourceUrl)).status).to.equal(200);
      expect(values(await world.unspentNotes(vault))).to.deep.equal([two.value, 5_000_000n - grossForNet(price, TAKE_BPS)]);
    });

    it("refuses, proving nothing, a quote that takes more than the facilitator's supported stated, when the agent proves", async function () {
      const { agent, vault, two, five } = await agentWithTwoNotes({ facilitator: new NoTakeStated(world.relayer.url) });
      const refused = await rejectionOf(agent.fetch(expensive.resourceUrl));
      expect(refused).to.have.property("code", "QUOTE_REFUSED");
      expect(refused.message).to.contain(`it withdraws ${grossForNet(price, TAKE_BPS)}, not ${price}`);
      expect(values(await world.unspentNotes(vault))).to.deep.equal([two.value, five.value]);
    });
  });

  describe("a seller whose facilitator refuses after the payer is funded", function () {
    let unfunded: ReferenceFacilitator;

    before(async function () {
      // The reference facilitator with a key that holds no ETH: it verifies, and cannot send the settlement.
      unfunded = await startReferenceFacilitator({
        rpcUrl: world.chain.rpc.url,
        chainId: world.chainId,
        privateKey: Wallet.createRandom().privateKey as `0x${string}`,
      });
      closers.push(unfunded);
    });

    it("throws PaymentNotAcceptedError with the seller's answer, the payer, the amount and when the refund comes", async function () {
      const { agent, vault, deposit } = await world.newAgent(world.chain.depositors.dave, 1_000_000n);
      const target = await seller({ facilitatorUrl: unfunded.url });
      const refused = await rejectionOf(agent.fetch(target.resourceUrl));

      expect(refused).to.be.instanceOf(PaymentNotAcceptedError);
      const { payment } = refused as PaymentNotAcceptedError;
      // The reference v2 seller answers a failed settlement with 402 and the facilitator's reason in PAYMENT-RESPONSE.
      // Simulated or sent, the unfunded facilitator's transaction fails: which of the two depends on its gas estimate.
      expect(payment.seller.status).to.equal(402);
      expect(payment.seller.reason, JSON.stringify(payment.seller)).to.match(/^invalid_exact_evm_transaction_(simulation_)?failed$/);
      expect(payment).to.deep.include({ url: target.resourceUrl, amount: world.price.toString(), gross: grossForNet(world.price, TAKE_BPS).toString() });
      expect(await poolAnswersFor(world.chain.facilitator, payment.xPayment), "the pool holds the price for the seller").to.equal(true);
      expect(payment.validBefore).to.be.greaterThan(Date.now() / 1000);
      expect(payment.refund).to.contain(`validBefore ${payment.validBefore}`).and.to.contain("refund note");
      expect(refused.message).to.contain(payment.payer).and.to.contain(`answered the paid request with ${payment.seller.status}`);
      // The change note was saved before the seller was asked.
      expect(values(await world.unspentNotes(vault))).to.deep.equal([deposit.note.value - grossForNet(world.price, TAKE_BPS)]);
    });
  });
});

import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { copyFileSync } from "node:fs";
import { expect } from "chai";
import { toQuantity, Wallet } from "ethers";
import pg from "pg";
import { nullifierHashOf } from "../../sdk/index.js";
import { NoteVault, ShieldedPaymentRefusedError, type AgentEvent } from "../../sdk/agent/index.js";
import { buildProbePayment } from "../../sdk/x402/probe.js";
import { caip2NetworkOf, encodeXPayment, parsePaymentRequired, paymentHeaders, readPaymentRequired, selectExactRequirement, settlementErrorOf, type ResourceInfo, type ShieldedPaymentPayload } from "../../sdk/x402/index.js";
import { startSeller } from "../../x402-peers/seller.js";
import { PostgresServedPayments } from "../../seller/index.js";
import { createTestSchema, type TestSchema } from "../helpers/database.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { relayerKey } from "../relayer/helpers/relayer-harness.js";
import { AGENT_PASSPHRASE, startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";

type Agent = Awaited<ReturnType<PaymentWorld["newAgent"]>>["agent"];

/** Paid means served: every shielded-proof payment the pool paid answers exactly one request, whatever broke between. */
describe("paid means served: a shielded-proof payment interrupted between paid and served is served once when presented again", function () {
  let world: PaymentWorld;
  let schema: TestSchema;

  before(async function () {
    world = await startPaymentWorld();
    schema = await createTestSchema();
  });
  after(async function () {
    await world?.close();
    await schema?.drop();
  });

  /** A payment the agent proves for `url`'s 402, not yet sent. */
  async function paymentFor(agent: Agent, url: string) {
    const required = await readPaymentRequired(await fetch(url));
    if (required?.x402Version !== 2) throw new Error(`${url} did not answer a v2 402`);
    const entry = (await agent.shieldedEntryOf(required))!;
    const proven = await agent.proveShieldedRequirement(url, entry);
    const payment: ShieldedPaymentPayload = { x402Version: 2, resource: required.resource, accepted: entry, payload: proven.payload };
    return { payment, proven, nullifierHash: nullifierHashOf(proven.held.note.nullifier) };
  }

  const send = (url: string, payment: ShieldedPaymentPayload) => fetch(url, { headers: paymentHeaders(encodeXPayment(payment)) });
  /** The seller's reason for a 402: its settle's failure, or its verify's refusal. */
  const reasonOf = (response: Response) => settlementErrorOf(response.headers) ?? parsePaymentRequired(response.headers, "")?.error;
  /** Whether the seller's facilitator answered `success` to a settle of `payment` sent straight to it (no seller in between). */
  const settledAtFacilitator = async (facilitatorUrl: string, payment: ShieldedPaymentPayload): Promise<boolean> => {
    const answer = await fetch(`${facilitatorUrl}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ x402Version: 2, paymentPayload: payment, paymentRequirements: payment.accepted }),
    });
    return ((await answer.json()) as { success: boolean }).success;
  };
  /** The payment, served already, is refused when presented again, and the seller was paid its price once. */
  const expectAnsweredOnce = async (seller: { resourceUrl: string; payTo: string }, payment: ShieldedPaymentPayload) => {
    const again = await send(seller.resourceUrl, payment);
    expect(again.status).to.equal(402);
    expect(reasonOf(again)).to.equal("invalid_shielded_payment_already_used");
    expect(await world.usdcBalance(seller.payTo)).to.equal(world.price);
  };
  const servedRecord = () => PostgresServedPayments.open(new pg.Pool({ connectionString: schema.connectionString, options: `-c search_path=${schema.schema}` }));

  for (const [facilitator, where] of [
    ["relayer", "the relayer's seller routes"],
    ["reference", "the seller's own facilitator with the plug-in"],
  ] as const) {
    it(`a stranger holding the payment header settles it at ${where} first: the agent is still served at once, once, and the seller paid once`, async function () {
      const seller = await world.startShieldedSeller({ facilitator });
      try {
        const { agent } = await world.newAgent(world.chain.depositors.alice, 1_000_000n);
        const { payment, nullifierHash } = await paymentFor(agent, seller.resourceUrl);
        expect(await settledAtFacilitator(seller.facilitatorUrl, payment), "the stranger's settle relays it").to.equal(true);
        expect(await world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHash)).to.equal(true);

        const served = await send(seller.resourceUrl, payment);
        expect(served.status, `the agent's presentation is served: ${reasonOf(served)}`).to.equal(200);
        await expectAnsweredOnce(seller, payment);
      } finally {
        await seller.close();
      }
    });
  }

  it("a plain buyer whose payment the seller's facilitator does not answer (its store or chain away) gets a retryable reason, not a bare 402", async function () {
    // The seller's facilitator: the relayer's supported kinds, and 503 to every verify and settle.
    const down = createServer((request, response) => {
      if (request.method === "GET" && request.url === "/supported") {
        void fetch(`${world.relayer.url}/api/seller/supported`).then(async (answer) => response.writeHead(200, { "content-type": "application/json" }).end(await answer.text()));
        return;
      }
      response.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ code: "STORE_UNAVAILABLE", error: "the relayer's database is unavailable" }));
    });
    down.listen(0, "127.0.0.1");
    await once(down, "listening");
    const seller = await startSeller({
      facilitatorUrl: `http://127.0.0.1:${(down.address() as AddressInfo).port}`,
      x402Version: 2,
      network: caip2NetworkOf(world.chainId),
      payTo: Wallet.createRandom().address,
      asset: world.asset,
      amountAtomic: world.price.toString(),
      offers: "both",
    });
    try {
      const required = await readPaymentRequired(await fetch(seller.resourceUrl));
      const plain = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
      const response = await fetch(seller.resourceUrl, { headers: paymentHeaders(encodeXPayment(await buildProbePayment(plain, required!.resource as ResourceInfo))) });
      expect(response.status).to.equal(402);
      expect(reasonOf(response)).to.equal("shielded_facilitator_unavailable");
    } finally {
      await seller.close();
      down.close();
    }
  });

  it("a handler slower than the lease serves one payment once under two presentations: the lease is held while it works", async function () {
    // A 2-second lease and a 7-second handler: unrenewed, the lease would lapse before the handler answers.
    const seller = await world.startShieldedSeller({ facilitator: "relayer", serveLeaseSeconds: 2, handlerDelayMs: 7_000 });
    try {
      const { agent } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
      const { payment } = await paymentFor(agent, seller.resourceUrl);
      const slow = send(seller.resourceUrl, payment);
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      const second = await send(seller.resourceUrl, payment);
      expect(second.status).to.equal(402);
      expect(reasonOf(second), "the first request still holds the payment").to.equal("shielded_payment_in_progress");
      const first = await slow;
      expect(first.status, await first.clone().text()).to.equal(200);
      await expectAnsweredOnce(seller, payment);
    } finally {
      await seller.close();
    }
  });

  it("a relay the relayer sent and never answered (its claim kept, the seller answered nothing): the same payment presented again is served once", async function () {
    const seller = await world.startShieldedSeller({ facilitator: "relayer" });
    try {
      const { agent } = await world.newAgent(world.chain.depositors.bob, 1_000_000n);
      const { payment, nullifierHash } = await paymentFor(agent, seller.resourceUrl);
      // The relayer of the first settle claimed the payment and relayed it, then died before answering.
      expect(await settledAtFacilitator(seller.facilitatorUrl, payment)).to.equal(true);
      expect(await world.relayer.relayer.store.claimSellerPayment(nullifierHash, 60), "its claim is still held").to.equal(false);

      const response = await send(seller.resourceUrl, payment);
      expect(response.status).to.equal(200);
      expect((await send(seller.resourceUrl, payment)).status).to.equal(402);
      expect(await world.usdcBalance(seller.payTo)).to.equal(world.price);
    } finally {
      await seller.close();
    }
  });

  it("two instances of a seller sharing one PostgreSQL record, and one restarted, serve one payment once between them", async function () {
    const referenceSecret = randomBytes(32);
    const records = [await servedRecord(), await servedRecord(), await servedRecord()];
    const first = await world.startShieldedSeller({ facilitator: "relayer", served: records[0], referenceSecret });
    const { payTo } = first;
    // The same seller (payTo, secret, record) as a second instance on another port.
    const second = await world.startShieldedSeller({ facilitator: "relayer", served: records[1], referenceSecret, payTo });
    try {
      const { agent } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
      const { payment } = await paymentFor(agent, first.resourceUrl);
      const answers = await Promise.all([send(first.resourceUrl, payment), send(second.resourceUrl, payment)]);
      expect(answers.map((answer) => answer.status).sort()).to.deep.equal([200, 402]);
      const refused = answers.find((answer) => answer.status === 402)!;
      expect(["invalid_shielded_payment_already_used", "shielded_payment_in_progress"]).to.include(reasonOf(refused));

      // A restart: a fresh process of the same seller with the same record.
      await first.close();
      const restarted = await world.startShieldedSeller({ facilitator: "relayer", served: records[2], referenceSecret, payTo });
      try {
        const afterRestart = await send(restarted.resourceUrl, payment);
        expect(afterRestart.status).to.equal(402);
      } finally {
        await restarted.close();
      }
      expect(await world.usdcBalance(payTo)).to.equal(world.price);
    } finally {
      await second.close();
      for (const record of records) await record.close();
    }
  });

  it("an RPC outage while the seller's plug-in verifies is answered as retryable, and the agent's same payment is served once the chain is back", async function () {
    const rpc = await startTcpProxy(world.chain.rpc.url);
    const seller = await world.startShieldedSeller({ facilitator: "reference", rpcUrl: rpc.url });
    try {
      const { agent, vault, events } = await world.newAgent(world.chain.depositors.dave, 1_000_000n, { presentAgainForMs: 3_000 });
      await rpc.cut();
      const refused = (await rejectionOf(agent.fetch(seller.resourceUrl))) as ShieldedPaymentRefusedError;
      expect(refused).to.be.instanceOf(ShieldedPaymentRefusedError);
      expect(refused.retryable, "an outage, not a refusal").to.equal(true);
      expect(refused.seller.reason).to.equal("shielded_facilitator_unavailable");
      expect(await world.usdcBalance(seller.payTo)).to.equal(0n);

      await rpc.restore();
      const response = await agent.fetch(seller.resourceUrl);
      expect(response.status).to.equal(200);
      const proofs = events.filter((event) => event.step === "proved-payment");
      expect(proofs, "the same payment was presented again: one proof, one note").to.have.length(1);
      expect(await world.usdcBalance(seller.payTo)).to.equal(world.price);
      const unspent = await world.unspentNotes(vault);
      expect(unspent, "the vault holds the change note alone").to.have.length(1);
    } finally {
      await seller.close();
      await rpc.cut();
    }
  });

  it("bounds a seller's window: a 40-day maxTimeoutSeconds gets a payment relayable for the agent's 5 minutes", async function () {
    const seller = await world.startShieldedSeller({ facilitator: "relayer", maxTimeoutSeconds: 40 * 24 * 3600 });
    try {
      const { agent, events } = await world.newAgent(world.chain.depositors.erin, 1_000_000n);
      const startedAt = Math.floor(Date.now() / 1000);
      expect((await agent.fetch(seller.resourceUrl)).status).to.equal(200);
      const proved = events.find((event): event is Extract<AgentEvent, { step: "proved-payment" }> => event.step === "proved-payment")!;
      expect(proved.validBefore).to.be.at.most(Math.floor(Date.now() / 1000) + 300);
      expect(proved.validBefore).to.be.at.least(startedAt + 295);
    } finally {
      await seller.close();
    }
  });

  it("after a restart, reconcile holds a sent payment's note for as long as the payment can be relayed, and finds it spent once it was", async function () {
    const seller = await world.startShieldedSeller({ facilitator: "relayer", maxTimeoutSeconds: 3600 });
    try {
      const { agent, vaultFile, deposit } = await world.newAgent(world.chain.depositors.alice, 1_000_000n, { maxPaymentWindowSeconds: 3600 });
      const { payment } = await paymentFor(agent, seller.resourceUrl);
      // The agent's process dies with the payment sent and unanswered: the vault as it left it.
      const crashed = `${vaultFile}.crashed`;
      copyFileSync(vaultFile, crashed);
      const vault = await NoteVault.open(crashed, AGENT_PASSPHRASE);
      const chain = { provider: world.provider, addressBook: world.chain.facilitator.addressBook };
      const held = await vault.reconcile({ ...chain, settleWindowMs: 0 });
      expect(held, "relayable for an hour: not freed, however old the send").to.deep.equal({ released: [], spent: [], pending: [deposit.note] });
      expect(await vault.reserve({ atLeast: 1n })).to.equal(undefined);

      // The seller settles it later, within its window: the note was spent, never freed for another payment.
      expect((await send(seller.resourceUrl, payment)).status).to.equal(200);
      const settled = await vault.reconcile({ ...chain, settleWindowMs: 0 });
      expect(settled.spent.map(({ note }) => note)).to.deep.equal([deposit.note]);
      expect(settled.released).to.deep.equal([]);
      await vault.close();
    } finally {
      await seller.close();
    }
  });

  it("a relay sent under a fee cap the base fee outgrows never holds the relaying key's later transactions: it is withdrawn, they are mined, and the payment is served once fees fall", async function () {
    const seller = await world.startShieldedSeller({ facilitator: "relayer", maxTimeoutSeconds: 300 });
    const rpc = world.provider;
    const relayingKey = relayerKey.address;
    try {
      const { agent } = await world.newAgent(world.chain.depositors.bob, 1_000_000n);
      const { payment, nullifierHash } = await paymentFor(agent, seller.resourceUrl);
      await rpc.send("evm_setAutomine", [false]);
      let answer: Response | undefined;
      let later: string | undefined;
      try {
        const sentBefore = await rpc.getTransactionCount(relayingKey, "latest");
        const answering = send(seller.resourceUrl, payment).then((response) => (answer = response));
        answering.catch(() => undefined);
        while ((await rpc.getTransactionCount(relayingKey, "pending")) === sentBefore) await new Promise((resolve) => setTimeout(resolve, 50));
        const pendingBlock = (await rpc.send("eth_getBlockByNumber", ["pending", true])) as { transactions: { from: string; maxFeePerGas: string }[] };
        const relay = pendingBlock.transactions.find((tx) => tx.from.toLowerCase() === relayingKey.toLowerCase())!;
        const cap = BigInt(relay.maxFeePerGas);
        // Every block from now on has a base fee twice the relay's cap.
        const mineAboveTheCap = async () => {
          await rpc.send("hardhat_setNextBlockBaseFeePerGas", [toQuantity(cap * 2n)]);
          await rpc.send("evm_mine", []);
        };
        for (let blocks = 0; blocks < 60 && answer === undefined; blocks++) {
          await mineAboveTheCap();
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
        await answering;
        // The base fee stays above the cap; the relaying key's next transaction, at the market's price, is mined.
        later = (await world.relayer.relayer.chain.sendFromRelayer({ to: Wallet.createRandom().address, value: 1n })).hash;
        await mineAboveTheCap();
      } finally {
        await rpc.send("evm_setAutomine", [true]);
      }
      expect(answer!.status).to.equal(402);
      expect(reasonOf(answer!), "withdrawn: an outage, not a refusal").to.equal("shielded_facilitator_unavailable");
      expect((await rpc.getTransactionReceipt(later!))?.status, "the key's later transaction was mined").to.equal(1);
      expect(await world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHash)).to.equal(false);
      expect(await world.usdcBalance(seller.payTo)).to.equal(0n);

      // Fees fall: the same payment, presented again, is relayed and served, once.
      await rpc.send("hardhat_setNextBlockBaseFeePerGas", [toQuantity(1_000_000n)]);
      await rpc.send("evm_mine", []);
      const served = await send(seller.resourceUrl, payment);
      expect(served.status, reasonOf(served)).to.equal(200);
      expect(await world.usdcBalance(seller.payTo)).to.equal(world.price);
    } finally {
      await seller.close();
    }
  });
});

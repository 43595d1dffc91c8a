import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { x402Client } from "@x402/core/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment } from "@x402/fetch";
import { expect } from "chai";
import { Interface, type Log } from "ethers";
import { Registry } from "prom-client";
import {
  NoteVault,
  privatePoolScheme,
  preferShieldedProof,
  registerPrivatePoolScheme,
  ShieldedPaymentRefusedError,
  X402Agent,
  type AgentEvent,
} from "../../sdk/agent/index.js";
import { FacilitatorClient } from "../../sdk/client/facilitator-client.js";
import { encodeSellerPayment, nullifierHashOf, toSolidityProof, type Note } from "../../sdk/index.js";
import { encodeXPayment, parsePaymentRequired, paymentHeaders, readPaymentRequired, type ShieldedPaymentPayload } from "../../sdk/x402/index.js";
import { OTHER_PAID_PATH, PAID_PATH, WEATHER_REPORT } from "../../x402-peers/seller.js";
import { gasCostInUsdc } from "../../lib/gas-cost.js";
import { deployForwarder } from "../relayer/helpers/forwarder.js";
import { treasury } from "../relayer/helpers/relayer-harness.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";
import { expectAbsentFrom } from "./helpers/absent-from.js";
import { plainBuyer } from "./helpers/plain-buyer.js";
import { sample } from "../helpers/metrics.js";

/** 2 USDC per ETH: the relayer harness's RELAYER_USDC_PER_ETH and the reference facilitator's in startShieldedSeller. */
const TEST_USDC_PER_ETH_ATOMIC = 2_000_000n;

const TRANSFER = new Interface(["event Transfer(address indexed from, address indexed to, uint256 value)"]);

/** The token transfers of a mined transaction, as (from, to, value). */
async function transfersIn(world: PaymentWorld, txHash: string) {
  const receipt = await world.provider.getTransactionReceipt(txHash);
  return receipt!.logs
    .filter((log: Log) => log.address.toLowerCase() === world.asset.toLowerCase())
    // Its other events (an EIP-3009 payment's AuthorizationUsed) are no transfers.
    .flatMap((log: Log) => TRANSFER.parseLog(log) ?? [])
    .map((event) => ({ from: String(event.args.from), to: String(event.args.to), value: BigInt(event.args.value) }));
}

describe("sellers paid straight from the pool by shielded proof", function () {
  let world: PaymentWorld;

  before(async function () {
    world = await startPaymentWorld();
  });
  after(async function () {
    await world?.close();
  });

  for (const facilitator of ["reference", "relayer"] as const) {
    it(`X402Agent.fetch pays an @x402/express seller whose facilitator is the ${facilitator === "reference" ? "@x402/core facilitator with the plug-in" : "relayer's seller routes"}: 200, exactly the price, one transaction, the agent in none`, async function () {
      const seller = await world.startShieldedSeller({ facilitator });
      try {
        const { agent, vault, address, deposit, events } = await world.newAgent(world.chain.depositors.alice, 1_000_000n);
        const poolBefore = await world.poolBalance();
        const response = await agent.fetch(seller.resourceUrl);
        expect(response.status).to.equal(200);
        expect(await response.json()).to.deep.equal(WEATHER_REPORT);

        const settlement = decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!);
        expect(settlement.success).to.equal(true);
        expect(await world.usdcBalance(seller.payTo)).to.equal(world.price);
        // One transaction moved the money, straight from the pool to payTo: no payer between them.
        const pool = await world.chain.facilitator.privacyPool.getAddress();
        expect(await transfersIn(world, settlement.transaction)).to.deep.equal([{ from: pool, to: seller.payTo, value: world.price }]);
        await expectAbsentFrom(world.provider, settlement.transaction, address);

        const proved = events.find((event): event is Extract<AgentEvent, { step: "proved-payment" }> => event.step === "proved-payment")!;
        const fee = BigInt(proved.fee);
        expect(await world.accruedFees(seller.feeRecipient)).to.equal(fee);
        // Whoever settles is paid at least its gas: the relay's cost in USDC at the facilitator's ETH price.
        const relayed = await world.provider.getTransactionReceipt(settlement.transaction);
        expect(relayed!.from).to.equal(seller.settler);
        expect(gasCostInUsdc(relayed!.gasUsed, relayed!.gasPrice, TEST_USDC_PER_ETH_ATOMIC)).to.be.at.most(fee);
        // And whatever the gas price had done before it was mined: its gas limit at its fee cap is within the fee.
        const sent = (await world.provider.getTransaction(settlement.transaction))!;
        expect(gasCostInUsdc(sent.gasLimit, sent.maxFeePerGas!, TEST_USDC_PER_ETH_ATOMIC)).to.be.at.most(fee);
        // The pool's notes gave the price and the fee; a fee owed to the relayer's treasury is no longer the notes'.
        const owedToTreasury = seller.feeRecipient === treasury.address ? fee : 0n;
        expect(await world.poolBalance()).to.equal(poolBefore - world.price - owedToTreasury);
        // The spent note is marked and its change saved: exactly what is left.
        const unspent = await world.unspentNotes(vault);
        expect(unspent.map((note) => note.value)).to.deep.equal([1_000_000n - world.price - fee]);
        expect(await world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(deposit.note.nullifier))).to.equal(true);
        expect(events.some((event) => event.step === "settled" || event.step === "probe")).to.equal(false);
      } finally {
        await seller.close();
      }
    });
  }

  it("the relayer's seller routes are a drop-in facilitator: one @x402/express seller is paid by a plain @x402/fetch client (EIP-3009) and by a private agent, the price each time, both counted", async function () {
    const seller = await world.startShieldedSeller({ facilitator: "relayer", offers: "both" });
    const settled = async (method: string) => sample(await world.relayer.relayer.metrics.registry.metrics(), "relayer_seller_payments_settled_total", { method });
    const settledBefore = { eip3009: await settled("eip3009"), shielded: await settled("shielded-proof") };
    try {
      const buyer = await plainBuyer(world, world.price);
      const plain = await buyer.fetch(seller.resourceUrl);
      expect(plain.status).to.equal(200);
      expect(await plain.json()).to.deep.equal(WEATHER_REPORT);
      const plainSettlement = decodePaymentResponseHeader(plain.headers.get("PAYMENT-RESPONSE")!);
      expect(await transfersIn(world, plainSettlement.transaction)).to.deep.equal([{ from: buyer.address, to: seller.payTo, value: world.price }]);
      expect((await world.provider.getTransactionReceipt(plainSettlement.transaction))!.from).to.equal(seller.eip3009Settler);
      expect(await world.usdcBalance(seller.payTo)).to.equal(world.price);
      expect(await world.usdcBalance(buyer.address)).to.equal(0n);

      // A private agent, at the same seller in the same run: paid from the pool, relayed by the relaying key.
      const { agent, address, events } = await world.newAgent(world.chain.depositors.erin, 1_000_000n);
      const poolBefore = await world.poolBalance();
      const shielded = await agent.fetch(seller.resourceUrl);
      expect(shielded.status).to.equal(200);
      const shieldedSettlement = decodePaymentResponseHeader(shielded.headers.get("PAYMENT-RESPONSE")!);
      const pool = await world.chain.facilitator.privacyPool.getAddress();
      expect(await transfersIn(world, shieldedSettlement.transaction)).to.deep.equal([{ from: pool, to: seller.payTo, value: world.price }]);
      expect((await world.provider.getTransactionReceipt(shieldedSettlement.transaction))!.from).to.equal(seller.settler);
      await expectAbsentFrom(world.provider, shieldedSettlement.transaction, address);
      expect(await world.usdcBalance(seller.payTo)).to.equal(2n * world.price);
      // The notes gave the price and the relay fee, which accrues to the relayer's treasury.
      const fee = BigInt(events.find((event): event is Extract<AgentEvent, { step: "proved-payment" }> => event.step === "proved-payment")!.fee);
      expect(await world.poolBalance()).to.equal(poolBefore - world.price - fee);

      expect(await settled("eip3009")).to.equal(settledBefore.eip3009 + 1);
      expect(await settled("shielded-proof")).to.equal(settledBefore.shielded + 1);
      // The EIP-3009 key paid the plain settle's gas, and the scrape shows what it has left.
      await world.relayer.relayer.refreshMetrics();
      const exposition = await world.relayer.relayer.metrics.registry.metrics();
      const left = sample(exposition, "relayer_seller_eip3009_key_balance_eth", { account: seller.eip3009Settler });
      expect(left).to.be.above(0).and.below(1);
    } finally {
      await seller.close();
    }
  });

  it("@x402/fetch with the private-pool scheme prefers the shielded-proof entry of a seller that offers both: 200, one transaction, counted by the plug-in", async function () {
    const metrics = new Registry();
    const seller = await world.startShieldedSeller({ facilitator: "reference", offers: "both", metrics });
    try {
      const { vault, address } = await world.newAgent(world.chain.depositors.bob, 1_000_000n);
      const scheme = privatePoolScheme({
        facilitator: new FacilitatorClient(world.relayer.url),
        notes: vault,
        network: { chainId: world.chainId, asset: world.asset },
        acceptNotPrivate: true,
      });
      const paidFetch = wrapFetchWithPayment(fetch, registerPrivatePoolScheme(new x402Client(preferShieldedProof), scheme));
      const response = await paidFetch(seller.resourceUrl);
      expect(response.status).to.equal(200);
      const settlement = decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!);
      const pool = await world.chain.facilitator.privacyPool.getAddress();
      expect(await transfersIn(world, settlement.transaction)).to.deep.equal([{ from: pool, to: seller.payTo, value: world.price }]);
      await expectAbsentFrom(world.provider, settlement.transaction, address);
      expect((await world.unspentNotes(vault)).length).to.equal(1);
      expect(sample(await metrics.metrics(), "shielded_facilitator_payments_settled_total", { method: "shielded-proof" })).to.equal(1);
    } finally {
      await seller.close();
    }
  });
});

describe("a seller's relay not mined in time: counted uncertain, and the agent told to present the same payment again", function () {
  let world: PaymentWorld;

  before(async function () {
    world = await startPaymentWorld({ relayer: { relayInclusionTimeoutMs: "1500" } });
  });
  after(async function () {
    await world?.close();
  });

  for (const facilitator of ["relayer", "reference"] as const) {
    const outcome = facilitator === "relayer" ? "withdrawn by the relaying key, it pays nothing" : "once it is mined, the same payment is served once";
    it(`${facilitator === "relayer" ? "the relayer's seller routes" : "the plug-in facilitator"}: an outage, not a refusal; ${outcome}`, async function () {
      const plugIn = new Registry();
      const seller = await world.startShieldedSeller({ facilitator, metrics: plugIn, inclusionTimeoutMs: 1500 });
      const automine = (on: boolean) => world.chain.connection.provider.request({ method: "evm_setAutomine", params: [on] });
      const uncertain = async () =>
        facilitator === "relayer"
          ? sample(await world.relayer.relayer.metrics.registry.metrics(), "relayer_seller_relays_uncertain_total")
          : sample(await plugIn.metrics(), "shielded_facilitator_relays_uncertain_total");
      try {
        const { agent, deposit } = await world.newAgent(world.chain.depositors.alice, 1_000_000n, { presentAgainForMs: 5_000 });
        const before = await uncertain();
        await automine(false);
        try {
          const refusal = await rejectionOf(agent.fetch(seller.resourceUrl));
          expect(refusal).to.be.instanceOf(ShieldedPaymentRefusedError);
          expect((refusal as ShieldedPaymentRefusedError).retryable, (refusal as ShieldedPaymentRefusedError).seller.reason).to.equal(true);
          expect(await uncertain()).to.equal(before + 1);
          expect(await world.usdcBalance(seller.payTo)).to.equal(0n);
          await world.chain.connection.provider.request({ method: "evm_mine", params: [] });
        } finally {
          await automine(true);
        }
        if (facilitator === "relayer") {
          // A capped relay left unmined is replaced by a transfer of nothing, so that it holds no later transaction of the key.
          expect(await world.usdcBalance(seller.payTo)).to.equal(0n);
          expect(await world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(deposit.note.nullifier))).to.equal(false);
        } else {
          expect((await agent.fetch(seller.resourceUrl)).status).to.equal(200);
          expect(await world.usdcBalance(seller.payTo)).to.equal(world.price);
        }
      } finally {
        await seller.close();
      }
    });
  }
});

describe("shielded-proof payments under attack: nothing paid twice, nothing paid but to payTo, nothing moved when refused", function () {
  let world: PaymentWorld;
  let seller: Awaited<ReturnType<PaymentWorld["startShieldedSeller"]>>;
  let otherSeller: Awaited<ReturnType<PaymentWorld["startShieldedSeller"]>>;

  before(async function () {
    world = await startPaymentWorld();
    seller = await world.startShieldedSeller({ facilitator: "relayer" });
    otherSeller = await world.startShieldedSeller({ facilitator: "relayer" });
  });
  after(async function () {
    await seller?.close();
    await otherSeller?.close();
    await world?.close();
  });

  /** A payment the agent proves for `url`'s 402, not yet sent: its header, its proof and the relay it makes. */
  async function paymentFor(agent: Awaited<ReturnType<PaymentWorld["newAgent"]>>["agent"], url: string) {
    const required = await readPaymentRequired(await fetch(url));
    if (required?.x402Version !== 2) throw new Error(`${url} did not answer a v2 402`);
    const entry = (await agent.shieldedEntryOf(required))!;
    const proven = await agent.proveShieldedRequirement(url, entry);
    const payment = { x402Version: 2 as const, resource: required.resource, accepted: entry, payload: proven.payload };
    const { addressBook } = world.chain.facilitator;
    const relay = {
      withdrawal: { processooor: addressBook.entrypoint, data: encodeSellerPayment(proven.payment) },
      proof: toSolidityProof({ proof: proven.payload.proof, publicSignals: proven.payload.publicSignals }),
      stateTreeSize: BigInt(proven.payload.stateTreeSize),
    };
    return { payment, proven, relay, nullifierHash: nullifierHashOf(proven.held.note.nullifier) };
  }

  const send = (url: string, payment: ShieldedPaymentPayload) => fetch(url, { headers: paymentHeaders(encodeXPayment(payment)) });
  const spent = (nullifierHash: bigint) => world.chain.facilitator.privacyPool.isNullifierSpent(nullifierHash);
  const otherPath = () => seller.resourceUrl.replace(PAID_PATH, OTHER_PAID_PATH);

  it("refuses a payment sent to another seller, as it is or rewritten to its payTo, and pays no one", async function () {
    const { agent } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
    const { payment, nullifierHash } = await paymentFor(agent, seller.resourceUrl);
    const rewritten = { ...payment, accepted: { ...payment.accepted, payTo: otherSeller.payTo } };
    for (const attempt of [payment, rewritten]) {
      const response = await send(otherSeller.resourceUrl, attempt);
      expect(response.status).to.equal(402);
    }
    expect(await world.usdcBalance(otherSeller.payTo)).to.equal(0n);
    expect(await world.usdcBalance(seller.payTo)).to.equal(0n);
    expect(await spent(nullifierHash)).to.equal(false);
  });

  it("refuses a payment for another request of the same seller, and one whose terms were changed, and moves nothing", async function () {
    const { agent } = await world.newAgent(world.chain.depositors.dave, 1_000_000n);
    const { payment, nullifierHash } = await paymentFor(agent, seller.resourceUrl);
    const otherRequest = await send(otherPath(), payment);
    expect(otherRequest.status).to.equal(402);
    expect(paymentRequiredError(otherRequest)).to.equal("invalid_shielded_reference");

    // A fresh reference of the other request swapped in: the reference is live, but the proof binds the first one.
    const fresh = await readPaymentRequired(await fetch(otherPath()));
    const freshReference = (fresh!.accepts[0]!.extra as { reference: string }).reference;
    const swapped = { ...payment, accepted: { ...payment.accepted, extra: { ...payment.accepted.extra, reference: freshReference } } };
    const swappedAnswer = await send(otherPath(), swapped);
    expect(swappedAnswer.status).to.equal(402);
    expect(paymentRequiredError(swappedAnswer)).to.equal("invalid_shielded_terms");

    // A longer window than the proof binds.
    const stretched = { ...payment, payload: { ...payment.payload, validBefore: String(BigInt(payment.payload.validBefore) + 30n) } };
    const stretchedAnswer = await send(seller.resourceUrl, stretched);
    expect(stretchedAnswer.status).to.equal(402);
    expect(paymentRequiredError(stretchedAnswer)).to.equal("invalid_shielded_terms");

    expect(await world.usdcBalance(seller.payTo)).to.equal(0n);
    expect(await spent(nullifierHash)).to.equal(false);
    // The untouched payment still pays the request it was made for, once.
    expect((await send(seller.resourceUrl, payment)).status).to.equal(200);
    expect(await world.usdcBalance(seller.payTo)).to.equal(world.price);
  });

  it("serves a payment once: the same payment sent twice, or to the other request after, is refused and paid once", async function () {
    const { agent } = await world.newAgent(world.chain.depositors.erin, 1_000_000n);
    const before = await world.usdcBalance(seller.payTo);
    const { payment } = await paymentFor(agent, seller.resourceUrl);
    expect((await send(seller.resourceUrl, payment)).status).to.equal(200);
    const again = await send(seller.resourceUrl, payment);
    expect(again.status).to.equal(402);
    expect(await world.usdcBalance(seller.payTo)).to.equal(before + world.price);
  });

  it("recognizes a payment a stranger relayed first through a contract of its own: the seller is paid once and serves once", async function () {
    const { agent, address } = await world.newAgent(world.chain.depositors.alice, 1_000_000n);
    const before = await world.usdcBalance(seller.payTo);
    const { payment, relay } = await paymentFor(agent, seller.resourceUrl);
    const { entrypoint, scope } = world.chain.facilitator;
    const stranger = world.chain.depositors.bob;
    const forwarder = await deployForwarder(stranger);
    const calldata = entrypoint.interface.encodeFunctionData("relay", [relay.withdrawal, relay.proof, scope, relay.stateTreeSize]);
    const frontRun = await (await forwarder.forward([await entrypoint.getAddress()], [calldata])).wait();

    const response = await send(seller.resourceUrl, payment);
    expect(response.status).to.equal(200);
    const settlement = decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!);
    expect(settlement.transaction).to.equal(frontRun!.hash);
    expect(await world.usdcBalance(seller.payTo)).to.equal(before + world.price);
    await expectAbsentFrom(world.provider, frontRun!.hash, address);
    // The fee went where the proof said, not to whoever sent the transaction.
    expect(await world.accruedFees(stranger.address)).to.equal(0n);
    expect((await send(seller.resourceUrl, payment)).status).to.equal(402);
  });

  it("fails the settle of a payment verified while its note was unspent, once the note paid another seller: nothing paid twice", async function () {
    const { agent } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
    const first = await paymentFor(agent, seller.resourceUrl);
    // Verified by the seller's facilitator (the relayer's seller routes), not yet settled.
    const requirements = { ...first.payment.accepted };
    const body = { x402Version: 2, paymentPayload: first.payment, paymentRequirements: requirements };
    const verified = await postJson(`${seller.facilitatorUrl}/verify`, body);
    expect(verified).to.include({ isValid: true });

    // Meanwhile the same note pays the other seller: a second proof out of it, relayed (here by anyone).
    agent.refuseShielded(first.proven);
    const second = await paymentFor(await agentWithNote(first.proven.held.note), otherSeller.resourceUrl);
    const otherBefore = await world.usdcBalance(otherSeller.payTo);
    expect((await send(otherSeller.resourceUrl, second.payment)).status).to.equal(200);

    const sellerBefore = await world.usdcBalance(seller.payTo);
    const settled = await postJson(`${seller.facilitatorUrl}/settle`, body);
    expect(settled).to.include({ success: false, errorReason: "invalid_shielded_note_spent" });
    expect(await world.usdcBalance(seller.payTo)).to.equal(sellerBefore);
    expect(await world.usdcBalance(otherSeller.payTo)).to.equal(otherBefore + world.price);
  });

  it("refuses a payment whose fee does not pay its relay's gas now, so that the facilitator never relays at a loss; nothing moves", async function () {
    // ETH at 3,000 USDC: a relay costs the facilitator far more than the 5000 atomic fee it announces.
    const metrics = new Registry();
    const dear = await world.startShieldedSeller({ facilitator: "reference", usdcPerEth: 3_000_000_000n, metrics });
    try {
      const { agent, deposit } = await world.newAgent(world.chain.depositors.dave, 1_000_000n);
      const refusal = await rejectionOf(agent.fetch(dear.resourceUrl));
      expect(refusal).to.be.instanceOf(ShieldedPaymentRefusedError);
      expect((refusal as ShieldedPaymentRefusedError).seller.reason).to.equal("invalid_shielded_fee_below_gas_cost");
      expect(await spent(nullifierHashOf(deposit.note.nullifier))).to.equal(false);
      expect(await world.usdcBalance(dear.payTo)).to.equal(0n);
      const refused = { method: "shielded-proof", step: "verify", reason: "invalid_shielded_fee_below_gas_cost" };
      expect(sample(await metrics.metrics(), "shielded_facilitator_payments_refused_total", refused)).to.equal(1);
    } finally {
      await dear.close();
    }
  });

  it("answers the seller-side routes in x402's shapes, and refuses a body that is not an x402 request", async function () {
    const supported = (await (await fetch(`${seller.facilitatorUrl}/supported`)).json()) as {
      kinds: { scheme: string; network: string; extra: Record<string, unknown> }[];
      signers: Record<string, string[]>;
    };
    // One `exact` kind, as x402 has one scheme per network: shielded proofs by its extra's terms, plain payments besides.
    expect(supported.kinds).to.have.length(1);
    expect(supported.signers["eip155:*"]).to.have.members([seller.settler, seller.eip3009Settler]);
    expect(supported.kinds[0]).to.deep.include({ scheme: "exact", network: `eip155:${world.chainId}` });
    expect(supported.kinds[0]!.extra).to.deep.include({ assetTransferMethod: "shielded-proof", feeRecipient: treasury.address, fee: "10000" });
    const malformed = await fetch(`${seller.facilitatorUrl}/verify`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(malformed.status).to.equal(400);
    expect(await malformed.json()).to.include({ code: "INVALID_REQUEST" });
    const eip3009 = await postJson(`${seller.facilitatorUrl}/verify`, {
      x402Version: 2,
      paymentPayload: { x402Version: 2, accepted: {}, payload: {} },
      paymentRequirements: { scheme: "exact", network: `eip155:${world.chainId}`, extra: { name: "USDC", version: "2" } },
    });
    expect(eip3009).to.include({ isValid: false, invalidReason: "invalid_payload" });
    const elsewhere = await postJson(`${seller.facilitatorUrl}/settle`, {
      x402Version: 2,
      paymentPayload: { x402Version: 2, accepted: {}, payload: {} },
      paymentRequirements: { scheme: "exact", network: "eip155:1", extra: {} },
    });
    expect(elsewhere).to.include({ success: false, errorReason: "unsupported_scheme" });
  });

  /** An agent whose vault holds exactly `note`, facing the same relayer: a second spender of the same note. */
  async function agentWithNote(note: Note) {
    const vault = await NoteVault.create(path.join(mkdtempSync(path.join(tmpdir(), "double-")), "notes.vault"), "passphrase");
    await vault.save(note);
    return new X402Agent({
      facilitator: new FacilitatorClient(world.relayer.url),
      notes: vault,
      network: { chainId: world.chainId, asset: world.asset },
      acceptNotPrivate: true,
    });
  }
});

async function postJson(url: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(response.status, url).to.equal(200);
  return (await response.json()) as Record<string, unknown>;
}

/** The error a v2 402 names in its PAYMENT-REQUIRED header. */
function paymentRequiredError(response: Response): string | undefined {
  return parsePaymentRequired(response.headers, "")?.error;
}

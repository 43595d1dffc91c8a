import { x402Client } from "@x402/core/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment } from "@x402/fetch";
import { expect } from "chai";
import { poolAnswersFor } from "../helpers/pool-authorization.js";
import type { Signer } from "ethers";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { sweepExpiredPayers } from "../../relayer/x402/payer-sweep.js";
import {
  PaymentNotAcceptedError,
  privatePoolScheme,
  recoverNotes,
  registerPrivatePoolScheme,
  type AgentEvent,
  type PrivatePoolSchemeOptions,
  type X402Settlement,
} from "../../sdk/agent/index.js";
import { FacilitatorClient } from "../../sdk/client/facilitator-client.js";
import { deriveRefundSecrets, nullifierHashOf } from "../../sdk/index.js";
import { WEATHER_REPORT, type Seller } from "../../x402-peers/seller.js";
import { rejectionOf } from "../sdk/agent/helpers/rejection.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";
import { expectAbsentFrom } from "./helpers/absent-from.js";

const TAKE_BPS = 500n;

describe("@x402/fetch with only the private-pool scheme registered: an @x402/core client pays out of the pool", function () {
  let world: PaymentWorld;
  /** A seller whose x402 facilitator verifies payments but has no gas to settle them: it refuses after funding. */
  let brokeSeller: Seller;
  const gross = () => grossForNet(world.price, TAKE_BPS);

  before(async function () {
    world = await startPaymentWorld();
    brokeSeller = await world.startBrokeSeller();
  });
  after(async function () {
    await brokeSeller?.close();
    await world?.close();
  });

  /** An agent's vault with one deposit, and the reference fetch wrapper over an x402Client that knows only our scheme. */
  async function privateFetch(wallet: Signer, value: bigint | bigint[], options: Partial<PrivatePoolSchemeOptions> = {}) {
    const { vault, seed, address, deposit, deposits } = await world.newAgent(wallet, value);
    const events: AgentEvent[] = [];
    const scheme = privatePoolScheme({
      facilitator: new FacilitatorClient(world.relayer.url),
      notes: vault,
      network: { chainId: world.chainId, asset: world.asset },
      acceptNotPrivate: true,
      onEvent: (event) => events.push(event),
      ...options,
    });
    const paidFetch = wrapFetchWithPayment(fetch, registerPrivatePoolScheme(new x402Client(), scheme));
    const settlements = () => events.flatMap((event) => (event.step === "settled" ? [event.answer as X402Settlement] : []));
    return { paidFetch, vault, seed, address, deposit, deposits, events, settlements };
  }

  it("pays a v2 and a v1 reference seller (200 with the data), proving itself; the agent's address is in no transaction of either payment", async function () {
    const { paidFetch, vault, address, deposit, events, settlements } = await privateFetch(world.chain.depositors.alice, 1_000_000n);
    for (const [seller, payTo, header] of [
      [world.sellers.v2, world.payTo.v2, "PAYMENT-RESPONSE"],
      [world.sellers.v1, world.payTo.v1, "X-PAYMENT-RESPONSE"],
    ] as const) {
      const before = await world.usdcBalance(payTo);
      const response = await paidFetch(seller.resourceUrl);
      expect(response.status).to.equal(200);
      expect(await response.json()).to.deep.equal(WEATHER_REPORT);
      expect(await world.usdcBalance(payTo)).to.equal(before + world.price);
      const sellerSettlement = decodePaymentResponseHeader(response.headers.get(header)!);
      expect(sellerSettlement.success).to.equal(true);
      const settled = settlements().at(-1)!;
      expect(sellerSettlement.payer?.toLowerCase()).to.equal(settled.payer.toLowerCase());
      for (const txHash of [settled.fundingTxHash, sellerSettlement.transaction]) await expectAbsentFrom(world.provider, txHash, address);
      await world.syncIndexer();
    }
    expect(settlements().map((answer) => [answer.x402Version, answer.privacy.custody.mode])).to.deep.equal([
      [2, "non-custodial"],
      [1, "non-custodial"],
    ]);
    const payment = ["payment-required", "proved", "settled"];
    expect(events.map((event) => event.step)).to.deep.equal([...payment, ...payment]);
    expect((await world.unspentNotes(vault)).map((note) => note.value)).to.deep.equal([deposit.note.value - 2n * gross()]);
  });

  it("pays requests at once through one client out of a wallet of several notes, custodial: each spends a note of its own", async function () {
    const values = [1_000_000n, 1_100_000n, 1_200_000n];
    const { paidFetch, vault, deposits, settlements } = await privateFetch(world.chain.depositors.dave, values, { custody: "custodial" });
    const before = await world.usdcBalance(world.payTo.v2);
    const responses = await Promise.all(values.map(() => paidFetch(world.sellers.v2.resourceUrl)));
    for (const response of responses) expect(response.status).to.equal(200);
    expect(await world.usdcBalance(world.payTo.v2)).to.equal(before + 3n * world.price);
    expect(settlements().map((answer) => answer.privacy.custody.mode)).to.deep.equal(["custodial", "custodial", "custodial"]);
    const entries = await vault.list();
    expect(entries.filter((entry) => entry.spent).map((entry) => entry.note)).to.have.deep.members(deposits.map(({ note }) => note));
    expect(entries.filter((entry) => !entry.spent).map((entry) => entry.note.value)).to.have.members(values.map((value) => value - gross()));
  });

  it("refuses a price above maxPaymentAtomic with the agent's message, before any note moves", async function () {
    const { paidFetch, vault, deposit, events } = await privateFetch(world.chain.depositors.bob, 1_000_000n, { maxPaymentAtomic: world.price - 1n });
    const pool = await world.poolBalance();
    const refused = await rejectionOf(paidFetch(world.sellers.v2.resourceUrl));
    expect(refused.message).to.contain(`asks ${world.price} atomic USDC, above this agent's maxPaymentAtomic of ${world.price - 1n}; nothing was paid`);
    expect(events.map((event) => event.step)).to.deep.equal(["payment-required"]);
    expect(await world.poolBalance()).to.equal(pool);
    expect(await world.unspentNotes(vault)).to.deep.equal([deposit.note]);
  });

  // Last: the sweep moves the chain's clock past the authorization, which would expire any later payment's window.
  it("a seller whose facilitator refuses after funding: PaymentNotAcceptedError, and the sweep brings the price home as a refund note of the seed", async function () {
    const { paidFetch, seed, deposit } = await privateFetch(world.chain.depositors.carol, 1_000_000n);
    const refused = await rejectionOf(paidFetch(brokeSeller.resourceUrl));
    expect(refused).to.be.instanceOf(PaymentNotAcceptedError);
    const { payment } = refused as PaymentNotAcceptedError;
    expect(payment).to.deep.include({ url: brokeSeller.resourceUrl, amount: world.price.toString(), gross: gross().toString() });
    expect(payment.seller.status).to.equal(402);
    expect(refused.message).to.contain(payment.payer).and.to.contain("refund note");
    expect(await poolAnswersFor(world.chain.facilitator, payment.xPayment), "the pool still answers for the price").to.equal(true);

    const { time } = world.chain.connection.networkHelpers;
    await time.increaseTo(Math.max(await time.latest(), payment.validBefore) + 1);
    const { records: swept } = await sweepExpiredPayers({ store: world.relayer.relayer.store, chain: world.relayer.relayer.chain });
    expect(swept.find((record) => record.nullifierHash === nullifierHashOf(deposit.note.nullifier))).to.deep.include({ outcome: "deposited", amount: world.price });
    expect(await poolAnswersFor(world.chain.facilitator, payment.xPayment), "returned, the pool answers for it no more").to.equal(false);

    await world.syncIndexer();
    const recovered = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed });
    const refund = recovered.chains.find((chain) => chain.origin === "refund");
    expect(refund).to.deep.include({ status: "unspent" });
    expect(refund!.latest.value).to.equal(world.price);
    expect(refund!.latest.nullifier).to.equal(deriveRefundSecrets(deposit.note).nullifier);
  });
});

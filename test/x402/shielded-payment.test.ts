import { x402Client } from "@x402/core/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment } from "@x402/fetch";
import { expect } from "chai";
import { Interface, type Log } from "ethers";
import { privatePoolScheme, registerPrivatePoolScheme, preferShieldedProof, type AgentEvent } from "../../sdk/agent/index.js";
import { FacilitatorClient } from "../../sdk/client/facilitator-client.js";
import { nullifierHashOf } from "../../sdk/index.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { treasury } from "../relayer/helpers/relayer-harness.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";
import { expectAbsentFrom } from "./helpers/absent-from.js";

const TRANSFER = new Interface(["event Transfer(address indexed from, address indexed to, uint256 value)"]);

/** The token transfers of a mined transaction, as (from, to, value). */
async function transfersIn(world: PaymentWorld, txHash: string) {
  const receipt = await world.provider.getTransactionReceipt(txHash);
  return receipt!.logs
    .filter((log: Log) => log.address.toLowerCase() === world.asset.toLowerCase())
    .map((log: Log) => TRANSFER.parseLog(log)!)
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

  it("@x402/fetch with the private-pool scheme prefers the shielded-proof entry of a seller that offers both: 200, one transaction", async function () {
    const seller = await world.startShieldedSeller({ facilitator: "reference", offers: "both" });
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
    } finally {
      await seller.close();
    }
  });
});

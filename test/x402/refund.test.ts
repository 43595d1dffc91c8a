import { expect } from "chai";
import { Wallet } from "ethers";
import { recoverNotes } from "../../sdk/agent/index.js";
import { noteToWire } from "../../sdk/client/facilitator-client.js";
import { createNote, deriveChangeSecrets, deriveRefundSecrets, nullifierHashOf } from "../../sdk/index.js";
import { sweepExpiredPayers } from "../../relayer/x402/payer-sweep.js";
import { caip2NetworkOf } from "../../x402/networks.js";
import { readPaymentRequired, selectExactRequirement } from "../../x402/payment-required.js";
import { startReferenceFacilitator, type ReferenceFacilitator } from "../../x402-peers/reference-facilitator.js";
import { startSeller, type Seller } from "../../x402-peers/seller.js";
import { PAYER_KEY_SECRET, relayerKey } from "../relayer/helpers/relayer-harness.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";

const SETTLE_X402 = "/api/facilitator/settle-x402";
/** 0.05 USDC: far below the 1 USDC minimum deposit that used to strand such refunds at the payer. */
const PRICE = 50_000n;

describe("refunds: a payment the seller refused after funding comes home as a note of the agent's seed", function () {
  let world: PaymentWorld;
  /** A seller whose x402 facilitator verifies payments but has no gas to settle them: it refuses after funding. */
  let brokeFacilitator: ReferenceFacilitator;
  let seller: Seller;

  before(async function () {
    world = await startPaymentWorld({ price: PRICE });
    const { entrypoint } = world.chain.facilitator;
    await (await entrypoint.grantRole(await entrypoint.REFUNDER_ROLE(), relayerKey.address)).wait();
    brokeFacilitator = await startReferenceFacilitator({
      rpcUrl: world.chain.rpc.url,
      chainId: world.chainId,
      privateKey: Wallet.createRandom().privateKey as `0x${string}`,
    });
    seller = await startSeller({
      facilitatorUrl: brokeFacilitator.url,
      asset: world.asset,
      amountAtomic: PRICE.toString(),
      x402Version: 2,
      network: caip2NetworkOf(world.chainId),
      payTo: Wallet.createRandom().address,
    });
  });
  after(async function () {
    await seller?.close();
    await brokeFacilitator?.close();
    await world?.close();
  });

  it("sweeps the exact amount back after expiry as a refund note that the seed recovers, approved at once, not a depositor", async function () {
    const { deposit, seed } = await world.newAgent(world.chain.depositors.carol, 1_000_000n);
    const anonymityBefore = (await world.indexer.client.status()).anonymitySet;

    // The relayer pays the single-use payer from the note, as the agent SDK asks it to.
    const required = await readPaymentRequired(await fetch(seller.resourceUrl));
    const accepted = selectExactRequirement(required!, { chainId: world.chainId, asset: world.asset })!;
    const change = deriveChangeSecrets(deposit.note);
    const settled = await world.relayer.post(SETTLE_X402, {
      accepts: accepted,
      resource: required!.x402Version === 2 ? required!.resource : undefined,
      serviceDeposit: noteToWire(deposit.note),
      nextNullifier: change.nullifier.toString(),
      nextSecret: change.secret.toString(),
      acceptNotPrivate: true,
    });
    expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
    const payer = settled.body.payer as string;
    expect(await world.usdcBalance(payer)).to.equal(PRICE);

    // The seller's facilitator refuses the payment: the seller answers without the resource, the money stays put.
    const xPayment = settled.body.xPayment as string;
    const refused = await fetch(seller.resourceUrl, { headers: { "PAYMENT-SIGNATURE": xPayment, "X-PAYMENT": xPayment } });
    expect(refused.ok, `seller answered ${refused.status}`).to.equal(false);
    expect(await world.usdcBalance(payer)).to.equal(PRICE);

    // Nothing is swept while the seller could still use the authorization.
    const sweep = () =>
      sweepExpiredPayers({ store: world.relayer.relayer.store, chain: world.relayer.relayer.chain, payerKeySecret: PAYER_KEY_SECRET });
    expect((await sweep()).filter((record) => record.payer === payer)).to.deep.equal([]);

    const { time } = world.chain.connection.networkHelpers;
    await time.increaseTo(Math.max(await time.latest(), settled.body.validBefore as number) + 1);
    const [swept] = (await sweep()).filter((record) => record.payer === payer);
    expect(swept).to.deep.include({ outcome: "deposited", amount: PRICE });
    expect(await world.usdcBalance(payer)).to.equal(0n);

    // From the seed alone: a refund note of exactly the amount, unspent.
    const recovered = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed });
    const refundChain = recovered.chains.find((chain) => chain.origin === "refund");
    expect(refundChain?.status).to.equal("unspent");
    expect(refundChain?.latest.value).to.equal(PRICE);
    const refundNote = createNote(PRICE, refundChain!.latest.label, deriveRefundSecrets(deposit.note));
    expect(refundChain?.latest).to.deep.equal(refundNote);
    expect(recovered.unspent).to.deep.include(refundNote);

    // The curator approves it in the sync that reads it, marked as the refund of the note that paid, and the
    // anonymity set does not move.
    await world.syncIndexer();
    const view = await world.indexer.client.deposit(refundNote.label);
    expect(view.refundOf).to.equal(nullifierHashOf(deposit.note.nullifier));
    expect(view.depositor).to.equal(payer);
    expect(view.aspDecisions.map((decision) => decision.approved)).to.deep.equal([true]);
    expect(view.aspDecisions[0]!.reason).to.contain("refund");
    expect((await world.indexer.client.aspProof(refundNote.label)).witness.root).to.equal(
      await world.chain.facilitator.entrypoint.latestRoot(),
    );
    expect((await world.indexer.client.status()).anonymitySet).to.equal(anonymityBefore);
  });
});

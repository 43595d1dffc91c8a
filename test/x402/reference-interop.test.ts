import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { expect } from "chai";
import { Wallet } from "ethers";
import { caip2NetworkOf, v1NetworkOf } from "../../sdk/x402/networks.js";
import { buildPaymentPayload, encodeXPayment, paymentHeaders, validityWindow } from "../../sdk/x402/payload.js";
import { readPaymentRequired, selectExactRequirement } from "../../sdk/x402/payment-required.js";
import { startPlain402 } from "../../x402-peers/plain-402.js";
import { buildProbePayment, classifyProbeResponse } from "../../sdk/x402/probe.js";
import { startReferenceFacilitator } from "../../x402-peers/reference-facilitator.js";
import type { PaymentPayload } from "../../sdk/x402/schemas.js";
import { startSeller, WEATHER_REPORT, type Seller } from "../../x402-peers/seller.js";
import { startLocalChain } from "../indexer/helpers/local-chain.js";

const PRICE = 10_000n;

const chain = await startLocalChain();
const { usdc } = chain.facilitator;
const { ethers, networkHelpers } = chain.connection;
const chainId = Number((await ethers.provider.getNetwork()).chainId);
const asset = await usdc.getAddress();

const facilitatorKey = Wallet.createRandom();
await networkHelpers.setBalance(facilitatorKey.address, 10n ** 18n);
const facilitator = await startReferenceFacilitator({
  rpcUrl: chain.rpc.url,
  chainId,
  privateKey: facilitatorKey.privateKey as `0x${string}`,
});
const sellerOptions = { facilitatorUrl: facilitator.url, asset, amountAtomic: PRICE.toString() };
const v2PayTo = Wallet.createRandom().address;
const v1PayTo = Wallet.createRandom().address;
const v2Seller = await startSeller({ ...sellerOptions, x402Version: 2, network: caip2NetworkOf(chainId), payTo: v2PayTo });
const v1Seller = await startSeller({ ...sellerOptions, x402Version: 1, network: v1NetworkOf(chainId) ?? "", payTo: v1PayTo });
const plain402 = await startPlain402();

/** A fresh single-use payer holding `amount` (the price, as settle-x402 leaves one) and no ETH. */
async function fundedPayer(amount = PRICE) {
  const payer = Wallet.createRandom();
  await (await usdc.mint(payer.address, amount)).wait();
  return payer;
}

/** The seller's exact USDC entry from its unpaid 402 (docs/api.md 1, step 2). */
async function requirementOf(seller: Seller) {
  const required = await readPaymentRequired(await fetch(seller.resourceUrl));
  if (required === undefined) throw new Error("the seller answered no x402 402");
  const accepted = selectExactRequirement(required, { chainId, asset });
  if (accepted === undefined) throw new Error("the seller offers no exact USDC entry");
  return { accepted, resource: required.x402Version === 2 ? required.resource : undefined };
}

const fetchPaid = (seller: Seller, payment: PaymentPayload) =>
  fetch(seller.resourceUrl, { headers: paymentHeaders(encodeXPayment(payment)) });

describe("x402 interop with the reference seller and facilitator", function () {
  after(async function () {
    await Promise.all([v2Seller.close(), v1Seller.close(), plain402.close()]);
    await facilitator.close();
    await chain.close();
  });

  it("registers the local chain's v1 name on every reference facilitator it starts", async function () {
    const another = await startReferenceFacilitator({
      rpcUrl: chain.rpc.url,
      chainId,
      privateKey: Wallet.createRandom().privateKey as `0x${string}`,
    });
    try {
      for (const running of [facilitator, another]) {
        const { kinds } = (await (await fetch(`${running.url}/supported`)).json()) as { kinds: object[] };
        expect(kinds).to.deep.include.members([
          { x402Version: 2, scheme: "exact", network: `eip155:${chainId}` },
          { x402Version: 1, scheme: "exact", network: "hardhat" },
        ]);
      }
    } finally {
      await another.close();
    }
  });

  describe("unpaid requests", function () {
    it("v2: 402 with the details base64 JSON in PAYMENT-REQUIRED and an empty JSON body", async function () {
      const response = await fetch(v2Seller.resourceUrl);
      expect(response.status).to.equal(402);
      expect(await response.json()).to.deep.equal({});
      const required = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED") ?? "");
      expect(required).to.deep.equal({
        x402Version: 2,
        error: "Payment required",
        resource: { url: v2Seller.resourceUrl, description: "Weather report", mimeType: "application/json" },
        accepts: [
          {
            scheme: "exact",
            network: `eip155:${chainId}`,
            amount: PRICE.toString(),
            asset,
            payTo: v2PayTo,
            maxTimeoutSeconds: 60,
            extra: { name: "USDC", version: "2" },
          },
        ],
      });
    });

    it("v1: 402 with x402Version 1 and accepts, maxAmountRequired, in the JSON body", async function () {
      const response = await fetch(v1Seller.resourceUrl);
      expect(response.status).to.equal(402);
      expect(response.headers.get("PAYMENT-REQUIRED")).to.equal(null);
      expect(await response.json()).to.deep.equal({
        x402Version: 1,
        error: "X-PAYMENT header is required",
        accepts: [
          {
            scheme: "exact",
            network: "hardhat",
            maxAmountRequired: PRICE.toString(),
            resource: v1Seller.resourceUrl,
            description: "Weather report",
            mimeType: "application/json",
            outputSchema: {},
            payTo: v1PayTo,
            maxTimeoutSeconds: 60,
            asset,
            extra: { name: "USDC", version: "2" },
          },
        ],
      });
    });
  });

  for (const [version, seller, payTo, responseHeader] of [
    [2, v2Seller, v2PayTo, "PAYMENT-RESPONSE"],
    [1, v1Seller, v1PayTo, "X-PAYMENT-RESPONSE"],
  ] as const) {
    describe(`paying a v${version} seller`, function () {
      it("answers 200 with the data to a payment built by x402/payload.ts; the reference facilitator settles it", async function () {
        const payer = await fundedPayer();
        const sellerBefore = await usdc.balanceOf(payTo);
        const { accepted, resource } = await requirementOf(seller);
        const payment = await buildPaymentPayload({
          accepted,
          resource,
          payer,
          window: validityWindow(accepted, Date.now() / 1000),
        });

        const response = await fetchPaid(seller, payment);
        expect(response.status).to.equal(200);
        expect(await response.json()).to.deep.equal(WEATHER_REPORT);

        const settlement = decodePaymentResponseHeader(response.headers.get(responseHeader) ?? "");
        expect(settlement).to.deep.include({ success: true, payer: payer.address, network: accepted.network });
        const transaction = await ethers.provider.getTransaction(settlement.transaction);
        expect(transaction?.from).to.equal(facilitator.address);
        expect(transaction?.to).to.equal(asset);
        expect(await usdc.balanceOf(payTo)).to.equal(sellerBefore + PRICE);
        expect(await usdc.balanceOf(payer.address)).to.equal(0n);
        expect(await ethers.provider.getBalance(payer.address)).to.equal(0n);
      });

      it("refuses the same payment a second time and moves nothing", async function () {
        const payer = await fundedPayer(2n * PRICE);
        const { accepted, resource } = await requirementOf(seller);
        const window = validityWindow(accepted, Date.now() / 1000);
        const payment = await buildPaymentPayload({ accepted, resource, payer, window });
        expect((await fetchPaid(seller, payment)).status).to.equal(200);
        const sellerBefore = await usdc.balanceOf(payTo);

        expect((await fetchPaid(seller, payment)).status).to.equal(402);
        expect(await usdc.balanceOf(payTo)).to.equal(sellerBefore);
        expect(await usdc.balanceOf(payer.address)).to.equal(PRICE);
      });
    });
  }

  describe("probe: an invalid-signature payment", function () {
    it("v2: 402 whose PAYMENT-REQUIRED names the verification error; classified compatible", async function () {
      const { accepted, resource } = await requirementOf(v2Seller);
      const response = await fetchPaid(v2Seller, await buildProbePayment(accepted, resource));

      expect(response.status).to.equal(402);
      const required = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED") ?? "");
      expect(required).to.deep.include({ x402Version: 2, error: "invalid_exact_evm_signature" });
      expect(required.accepts).to.deep.equal([accepted]);
      expect(await classifyProbeResponse(response)).to.equal("compatible");
    });

    it("v1: 402 whose JSON body names the verification error and the claimed payer; classified compatible", async function () {
      const { accepted } = await requirementOf(v1Seller);
      const probe = await buildProbePayment(accepted);
      const response = await fetchPaid(v1Seller, probe);

      expect(response.status).to.equal(402);
      expect(await response.clone().json()).to.deep.equal({
        x402Version: 1,
        error: "invalid_exact_evm_signature",
        accepts: [accepted],
        payer: probe.payload.authorization.from,
      });
      expect(await classifyProbeResponse(response)).to.equal("compatible");
    });

    it("a generic paywall: 402 without x402 details; classified incompatible", async function () {
      const { accepted, resource } = await requirementOf(v2Seller);
      const response = await fetch(plain402.url, {
        headers: paymentHeaders(encodeXPayment(await buildProbePayment(accepted, resource))),
      });

      expect(response.status).to.equal(402);
      expect(response.headers.get("PAYMENT-REQUIRED")).to.equal(null);
      expect(await response.clone().json()).to.deep.equal({ error: "Payment Required" });
      expect(await classifyProbeResponse(response)).to.equal("incompatible");
    });
  });
});

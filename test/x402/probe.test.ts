import { PaymentPayloadV2Schema } from "@x402/core/schemas";
import { expect } from "chai";
import { buildProbePayment, classifyProbeResponse } from "../../sdk/x402/probe.js";
import { buildRequirementV1, buildRequirementV2, paymentRequiredHeader, USDC_ON_BASE_SEPOLIA } from "./helpers/builders.js";
import { authorizationSigner, usdcDomain } from "./helpers/eip3009.js";

const resource = { url: "http://127.0.0.1:4021/weather", description: "Weather report", mimeType: "application/json" };

/** A 402 as the v2 reference seller sends it: details in PAYMENT-REQUIRED, `{}` as the body. */
const v2Refusal = (error: string) =>
  new Response("{}", {
    status: 402,
    headers: {
      "content-type": "application/json",
      "PAYMENT-REQUIRED": paymentRequiredHeader({ x402Version: 2, error, resource, accepts: [buildRequirementV2()] }),
    },
  });

/** A 402 as a v1 seller sends it: details in the JSON body. */
const v1Refusal = (error: string) =>
  Response.json({ x402Version: 1, error, accepts: [buildRequirementV1()] }, { status: 402 });

describe("probe classification", function () {
  it("is compatible when a v2 seller's verifier names why it refused the payment", async function () {
    expect(await classifyProbeResponse(v2Refusal("invalid_exact_evm_signature"))).to.equal("compatible");
  });

  it("is compatible when a v1 seller's verifier names why it refused the payment", async function () {
    expect(await classifyProbeResponse(v1Refusal("invalid_exact_evm_signature"))).to.equal("compatible");
  });

  it("is incompatible when an x402 seller did not read the payment", async function () {
    expect(await classifyProbeResponse(v2Refusal("Payment required"))).to.equal("incompatible");
    expect(await classifyProbeResponse(v1Refusal("X-PAYMENT header is required"))).to.equal("incompatible");
  });

  it("is incompatible for a generic 402", async function () {
    expect(await classifyProbeResponse(Response.json({ error: "payment_required" }, { status: 402 }))).to.equal(
      "incompatible",
    );
    expect(await classifyProbeResponse(new Response("Payment Required", { status: 402 }))).to.equal("incompatible");
  });

  it("is incompatible for any other status, even with x402 details", async function () {
    expect(await classifyProbeResponse(Response.json({ ok: true }))).to.equal("incompatible");
    const withDetails = v2Refusal("invalid_exact_evm_signature");
    expect(await classifyProbeResponse(new Response("{}", { status: 500, headers: withDetails.headers }))).to.equal(
      "incompatible",
    );
  });
});

describe("probe payment", function () {
  it("is a well-formed payment of the seller's entry whose signature is not the payer's", async function () {
    const accepted = buildRequirementV2();
    const probe = await buildProbePayment(accepted, resource);

    expect(PaymentPayloadV2Schema.safeParse(probe).success).to.equal(true);
    expect(probe).to.deep.include({ x402Version: 2, accepted, resource });
    const signer = authorizationSigner(usdcDomain(84532, USDC_ON_BASE_SEPOLIA), probe.payload);
    expect(signer).to.not.equal(probe.payload.authorization.from);
  });
});

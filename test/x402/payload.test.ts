import { decodePaymentSignatureHeader, encodePaymentRequiredHeader } from "@x402/core/http";
import { PaymentPayloadV1Schema, PaymentPayloadV2Schema } from "@x402/core/schemas";
import { expect } from "chai";
import { Wallet } from "ethers";
import { domainNamedBy, missingDomainMessage } from "../../sdk/x402/eip712-domain.js";
import {
  buildPaymentPayload,
  encodeXPayment,
  paymentHeaders,
  validityWindow,
  x402VersionOf,
  type ValidityWindow,
} from "../../sdk/x402/payload.js";
import { parsePaymentRequired, selectExactRequirement, whyNoExactRequirement } from "../../sdk/x402/payment-required.js";
import { ExactRequirementSchema, type PaymentPayloadV1, type PaymentPayloadV2 } from "../../sdk/x402/schemas.js";
import {
  addressOf,
  buildRequirementV1,
  buildRequirementV2,
  paymentRequiredHeader,
  USDC_ON_BASE_SEPOLIA,
} from "./helpers/builders.js";
import { authorizationSigner, usdcDomain } from "./helpers/eip3009.js";

const payer = new Wallet("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const window: ValidityWindow = { validAfter: 1_700_000_000n, validBefore: 1_700_000_660n };
const resource = { url: "http://127.0.0.1:4021/weather", description: "Weather report", mimeType: "application/json" };

describe("x402 payment payloads", function () {
  describe("v2", function () {
    it("echoes the seller's entry unchanged, extra fields included", async function () {
      const accepted = buildRequirementV2({ extra: { name: "USDC", version: "2", sellerNote: "kept" } });
      const payment = (await buildPaymentPayload({ accepted, resource, payer, window })) as PaymentPayloadV2;

      expect(Object.keys(payment)).to.deep.equal(["x402Version", "resource", "accepted", "payload"]);
      expect(payment.x402Version).to.equal(2);
      expect(payment.accepted).to.deep.equal(accepted);
      expect(payment.resource).to.deep.equal(resource);
      expect(PaymentPayloadV2Schema.safeParse(payment).success).to.equal(true);
    });

    it("authorizes exactly the seller's amount to its payTo, signed under the token's EIP-712 domain", async function () {
      const accepted = buildRequirementV2({ amount: "123456", payTo: addressOf(7) });
      const { payload } = await buildPaymentPayload({ accepted, resource, payer, window });

      expect(payload.authorization).to.deep.include({
        from: payer.address,
        to: addressOf(7),
        value: "123456",
        validAfter: "1700000000",
        validBefore: "1700000660",
      });
      expect(payload.authorization.nonce).to.match(/^0x[0-9a-f]{64}$/);
      expect(authorizationSigner(usdcDomain(84532, USDC_ON_BASE_SEPOLIA), payload)).to.equal(payer.address);
    });

    it("draws a fresh nonce for every payment", async function () {
      const accepted = buildRequirementV2();
      const first = await buildPaymentPayload({ accepted, resource, payer, window });
      const second = await buildPaymentPayload({ accepted, resource, payer, window });
      expect(first.payload.authorization.nonce).to.not.equal(second.payload.authorization.nonce);
    });
  });

  describe("v1", function () {
    it("carries scheme and network, not the seller's entry, and signs maxAmountRequired on the slug's chain", async function () {
      const accepted = buildRequirementV1({ network: "hardhat", maxAmountRequired: "5000" });
      const payment = (await buildPaymentPayload({ accepted, resource, payer, window })) as PaymentPayloadV1;

      expect(Object.keys(payment)).to.deep.equal(["x402Version", "scheme", "network", "payload"]);
      expect(payment).to.deep.include({ x402Version: 1, scheme: "exact", network: "hardhat" });
      expect(PaymentPayloadV1Schema.safeParse(payment).success).to.equal(true);
      expect(payment.payload.authorization.value).to.equal("5000");
      expect(authorizationSigner(usdcDomain(31337, USDC_ON_BASE_SEPOLIA), payment.payload)).to.equal(payer.address);
    });
  });

  it("encodes xPayment as base64 JSON that the reference header codec decodes to the payload", async function () {
    const payment = await buildPaymentPayload({ accepted: buildRequirementV2(), resource, payer, window });
    const xPayment = encodeXPayment(payment);
    expect(decodePaymentSignatureHeader(xPayment)).to.deep.equal(payment);
    expect(paymentHeaders(xPayment)).to.deep.equal({ "X-PAYMENT": xPayment, "PAYMENT-SIGNATURE": xPayment });
  });

  it("takes the reference client's validity window: 10 minutes back, maxTimeoutSeconds ahead", function () {
    expect(validityWindow(buildRequirementV2({ maxTimeoutSeconds: 300 }), 1_700_000_000.7)).to.deep.equal({
      validAfter: 1_699_999_400n,
      validBefore: 1_700_000_300n,
    });
  });
});

describe("x402 accepts entries", function () {
  it("tells v1 from v2 by the amount's field name", function () {
    expect(x402VersionOf(ExactRequirementSchema.parse(buildRequirementV2()))).to.equal(2);
    expect(x402VersionOf(ExactRequirementSchema.parse(buildRequirementV1()))).to.equal(1);
  });

  it("keeps the entry as sent: address casing and unknown fields", function () {
    const entry = buildRequirementV2({ payTo: addressOf(1).toLowerCase(), outputSchema: { note: 1 } });
    expect(ExactRequirementSchema.parse(entry)).to.deep.equal(entry);
  });

  const invalid: Array<[string, Record<string, unknown>]> = [
    ["a non-canonical amount", buildRequirementV2({ amount: "010" })],
    ["a zero amount", buildRequirementV1({ maxAmountRequired: "0" })],
    ["another scheme", { ...buildRequirementV2(), scheme: "upto" }],
    ["an unknown v1 network", buildRequirementV1({ network: "moonbase" })],
    ["no EIP-712 domain", { ...buildRequirementV2(), extra: {} }],
    ["a malformed payTo", buildRequirementV2({ payTo: "0x1234" })],
    ["no amount", (({ amount: _, ...rest }) => rest)(buildRequirementV2())],
  ];
  for (const [what, entry] of invalid) {
    it(`rejects ${what}`, function () {
      expect(ExactRequirementSchema.safeParse(entry).success).to.equal(false);
    });
  }
});

describe("x402 402 parsing", function () {
  const v2Required = {
    x402Version: 2 as const,
    error: "Payment required",
    resource,
    accepts: [
      { scheme: "exact", network: "solana:devnet", amount: "1", asset: "So1", payTo: "x", maxTimeoutSeconds: 60, extra: {} },
      buildRequirementV2(),
    ],
  };

  it("reads a v2 402 from its PAYMENT-REQUIRED header", function () {
    const headers = new Headers({ "PAYMENT-REQUIRED": paymentRequiredHeader(v2Required) });
    expect(parsePaymentRequired(headers, "{}")).to.deep.equal(v2Required);
  });

  it("reads a v1 402 from its JSON body", function () {
    const body = { x402Version: 1, error: "X-PAYMENT header is required", accepts: [buildRequirementV1()] };
    expect(parsePaymentRequired(new Headers(), JSON.stringify(body))).to.deep.equal(body);
  });

  it("finds nothing in a generic 402 or a malformed header", function () {
    expect(parsePaymentRequired(new Headers(), JSON.stringify({ error: "Payment Required" }))).to.equal(undefined);
    expect(parsePaymentRequired(new Headers(), "Payment Required")).to.equal(undefined);
    expect(parsePaymentRequired(new Headers({ "PAYMENT-REQUIRED": "not base64 json" }), "")).to.equal(undefined);
  });

  it("picks the exact entry for the agent's asset and chain among the seller's offers", function () {
    const wanted = { chainId: 84532, asset: USDC_ON_BASE_SEPOLIA.toLowerCase() };
    expect(selectExactRequirement(v2Required, wanted)).to.deep.equal(buildRequirementV2());
    expect(selectExactRequirement(v2Required, { ...wanted, chainId: 8453 })).to.equal(undefined);
    const v1Required = { x402Version: 1 as const, accepts: [buildRequirementV1()] };
    expect(selectExactRequirement(v1Required, wanted)).to.deep.equal(buildRequirementV1());
  });

  describe("an entry that names no EIP-712 domain (the rule the SDK and the relayer share)", function () {
    const wanted = { chainId: 84532, asset: USDC_ON_BASE_SEPOLIA };
    const withoutExtra = (({ extra: _, ...rest }) => rest)(buildRequirementV1());
    const cases: Array<[string, { scheme: string; network: string; asset: string; extra?: unknown }]> = [
      ["no extra (x402-express 1.x for an asset without eip712)", withoutExtra],
      ["extra: {} (@x402/express for a price without extra)", buildRequirementV2({ extra: {} as never })],
      ["an empty name", buildRequirementV2({ extra: { name: "", version: "2" } })],
      ["a numeric version", buildRequirementV2({ extra: { name: "USDC", version: 2 } as never })],
    ];
    for (const [what, entry] of cases) {
      it(`is not paid: ${what}`, function () {
        expect(domainNamedBy(entry)).to.equal(undefined);
        const required = { x402Version: 1 as const, accepts: [entry] };
        expect(selectExactRequirement(required, wanted)).to.equal(undefined);
        expect(whyNoExactRequirement(required, wanted)).to.equal(missingDomainMessage(wanted));
      });
    }

    it("names the domain of a well-formed entry, and says when nothing is offered for the asset", function () {
      expect(domainNamedBy(buildRequirementV2())).to.deep.equal({ name: "USDC", version: "2" });
      const required = { x402Version: 1 as const, accepts: [buildRequirementV1()] };
      expect(whyNoExactRequirement(required, { ...wanted, chainId: 8453 })).to.contain("offers no exact payment");
    });
  });
});

import type { PaymentPayload, PaymentRequirements, SchemeNetworkFacilitator, SettleResponse, VerifyResponse } from "@x402/core/types";
import { expect } from "chai";
import { Registry } from "prom-client";
import { SellerPaymentMetrics, ShieldedPaymentsScheme, type ShieldedPayments } from "../../seller/index.js";
import { sample } from "../helpers/metrics.js";

const NETWORK = "eip155:31337";
const SETTLER = "0x00000000000000000000000000000000000000a1";
const EIP3009_SETTLER = "0x00000000000000000000000000000000000000b2";
const plainEntry = { scheme: "exact", network: NETWORK, amount: "10000", asset: "0xusdc", payTo: "0xseller", maxTimeoutSeconds: 60, extra: { name: "USDC", version: "2" } } as PaymentRequirements;
const shieldedEntry = { ...plainEntry, extra: { assetTransferMethod: "shielded-proof" } } as PaymentRequirements;
const payment = { x402Version: 2, accepted: plainEntry, payload: {} } as unknown as PaymentPayload;

/** ShieldedPayments that answer as told, recording what they were asked. */
function shieldedPayments(answers: { verify: VerifyResponse; settle: SettleResponse }) {
  const asked: string[] = [];
  const payments = {
    network: NETWORK,
    extra: () => ({ assetTransferMethod: "shielded-proof", fee: "5000" }),
    verify: async () => (asked.push("verify"), answers.verify),
    settle: async () => (asked.push("settle"), answers.settle),
  } as unknown as ShieldedPayments;
  return { payments, asked };
}

/** The reference scheme's part: an `exact` facilitator scheme that settles whatever it is given. */
const innerScheme: SchemeNetworkFacilitator = {
  scheme: "exact",
  caipFamily: "eip155:*",
  getExtra: () => undefined,
  getSigners: () => [EIP3009_SETTLER],
  verify: async () => ({ isValid: true, payer: "0xbuyer" }),
  settle: async () => ({ success: true, payer: "0xbuyer", transaction: "0xtransfer", network: NETWORK }),
};

describe("ShieldedPaymentsScheme: one `exact` scheme for shielded-proof payments and plain ones, counted", function () {
  it("hands a shielded-proof payment to the shielded payments and a plain one to the inner scheme; supported names both settlers and the shielded terms", async function () {
    const registry = new Registry();
    const metrics = new SellerPaymentMetrics(registry, "test_");
    const { payments, asked } = shieldedPayments({
      verify: { isValid: true, payer: "0xpool" },
      settle: { success: true, payer: "0xpool", transaction: "0xrelay", network: NETWORK },
    });
    const scheme = new ShieldedPaymentsScheme({ payments, settler: SETTLER, inner: innerScheme, metrics });
    expect(scheme.getSigners(NETWORK)).to.have.members([SETTLER, EIP3009_SETTLER]);
    expect(scheme.getExtra(NETWORK)).to.deep.equal({ assetTransferMethod: "shielded-proof", fee: "5000" });

    expect(await scheme.settle(payment, shieldedEntry)).to.include({ transaction: "0xrelay" });
    expect(await scheme.settle(payment, plainEntry)).to.include({ transaction: "0xtransfer" });
    expect(asked).to.deep.equal(["settle"]);
    const exposition = await registry.metrics();
    expect(sample(exposition, "test_payments_settled_total", { method: "shielded-proof" })).to.equal(1);
    expect(sample(exposition, "test_payments_settled_total", { method: "eip3009" })).to.equal(1);
  });

  it("without an inner scheme refuses a plain payment as an answer, counted by its reason, and never throws", async function () {
    const registry = new Registry();
    const metrics = new SellerPaymentMetrics(registry, "test_");
    const { payments, asked } = shieldedPayments({
      verify: { isValid: false, invalidReason: "invalid_shielded_note_spent", payer: "0xpool" },
      settle: { success: false, errorReason: "invalid_shielded_note_spent", transaction: "", network: NETWORK },
    });
    const scheme = new ShieldedPaymentsScheme({ payments, settler: SETTLER, metrics });
    expect(scheme.getSigners(NETWORK)).to.deep.equal([SETTLER]);

    expect(await scheme.verify(payment, plainEntry)).to.include({ isValid: false, invalidReason: "unsupported_asset_transfer_method" });
    expect(await scheme.settle(payment, plainEntry)).to.include({ success: false, errorReason: "unsupported_asset_transfer_method", transaction: "" });
    expect(await scheme.verify(payment, shieldedEntry)).to.include({ isValid: false, invalidReason: "invalid_shielded_note_spent" });
    expect(asked).to.deep.equal(["verify"]);
    const exposition = await registry.metrics();
    const refused = (labels: Record<string, string>) => sample(exposition, "test_payments_refused_total", labels);
    expect(refused({ method: "eip3009", step: "verify", reason: "unsupported_asset_transfer_method" })).to.equal(1);
    expect(refused({ method: "eip3009", step: "settle", reason: "unsupported_asset_transfer_method" })).to.equal(1);
    expect(refused({ method: "shielded-proof", step: "verify", reason: "invalid_shielded_note_spent" })).to.equal(1);
    expect(sample(exposition, "test_payments_settled_total")).to.equal(0);
  });
});

import { expect } from "chai";
import { feeOf, formatUsdc, grossForNet, networkPricing, takeBpsFor } from "../../relayer/pricing.js";

describe("relayer pricing", function () {
  it("rounds the fee down as Entrypoint.relay does", function () {
    expect(feeOf(1_000_000n, 500n)).to.equal(50_000n);
    expect(feeOf(39_999n, 500n)).to.equal(1_999n);
    expect(feeOf(19n, 500n)).to.equal(0n);
  });

  it("finds the smallest gross whose net covers the amount, for every amount up to 2000 at several takes", function () {
    for (const bps of [0n, 1n, 250n, 500n, 3333n, 9999n]) {
      for (let net = 1n; net <= 2000n; net++) {
        const gross = grossForNet(net, bps);
        expect(gross - feeOf(gross, bps), `net ${net} at ${bps} bps`).to.be.at.least(net);
        expect(gross - 1n - feeOf(gross - 1n, bps), `net ${net} at ${bps} bps is not minimal`).to.be.below(net);
      }
    }
  });

  it("charges the tier's take on paid networks and nothing on free-for-testing ones", function () {
    expect(takeBpsFor("standard", networkPricing("eip155:8453"))).to.equal(500n);
    expect(takeBpsFor("standard", networkPricing("eip155:84532"))).to.equal(0n);
    expect(takeBpsFor("standard", networkPricing("eip155:31337"))).to.equal(0n);
    expect(takeBpsFor("compliance", networkPricing("eip155:31337", "paid"))).to.equal(500n);
    expect(takeBpsFor("enterprise", networkPricing("eip155:8453"))).to.equal(0n);
  });

  it("reads the test-network column on the local chain and the mainnet column on Base", function () {
    expect(networkPricing("eip155:31337").networkClass).to.equal("test");
    expect(networkPricing("eip155:8453").networkClass).to.equal("mainnet");
  });

  it("formats atomic USDC with six places", function () {
    expect(formatUsdc(40_000n)).to.equal("0.040000");
    expect(formatUsdc(1_234_567n)).to.equal("1.234567");
  });
});

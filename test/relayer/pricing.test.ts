import { gasCostInUsdc } from "../../lib/gas-cost.js";
import { expect } from "chai";
import {
  defaultUsdcPerEth,
  feeOf,
  formatUsdc,
  grossForNet,
  networkPricing,
  parseUsdc,
  RELAY_GAS,
  relayGasAt,
  smallestGrossForFee,
  takeBpsFor,
} from "../../relayer/pricing/pricing.js";

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

  it("prices a relay's gas by depth: depths 0 and 1 alike, then one Poseidon hash more per level", function () {
    expect(relayGasAt(0n)).to.equal(relayGasAt(1n));
    expect(relayGasAt(2n) - relayGasAt(1n)).to.equal(RELAY_GAS.perLevel);
    expect(relayGasAt(32n)).to.equal(RELAY_GAS.base + 32n * RELAY_GAS.perLevel);
  });

  it("prices ETH at 3000 USDC by default, and on the local chain low enough that a 5% take of 0.05 USDC covers a relay at 1 gwei", function () {
    expect(defaultUsdcPerEth("eip155:8453")).to.equal(parseUsdc("3000"));
    const localFloor = gasCostInUsdc(relayGasAt(20n), 1_000_000_000n, defaultUsdcPerEth("eip155:31337"));
    expect(localFloor).to.be.at.most(feeOf(50_000n, 500n));
    // The default of real chains refused such payments on a local node: its floor is over a USDC.
    expect(gasCostInUsdc(relayGasAt(20n), 1_000_000_000n, defaultUsdcPerEth("eip155:8453"))).to.be.above(1_000_000n);
  });

  it("converts gas to atomic USDC rounding up, so the floor never undercharges", function () {
    // 500k gas at 1 gwei is 0.0005 ETH: 1.5 USDC at 3000 USDC/ETH.
    expect(gasCostInUsdc(500_000n, 1_000_000_000n, parseUsdc("3000"))).to.equal(1_500_000n);
    expect(gasCostInUsdc(1n, 1n, 1n)).to.equal(1n);
    expect(gasCostInUsdc(0n, 1_000_000_000n, parseUsdc("3000"))).to.equal(0n);
  });

  it("finds the smallest gross whose rounded-down take reaches a fee, for every fee up to 3000 at several takes", function () {
    for (const bps of [1n, 250n, 500n, 3333n, 9999n]) {
      for (let fee = 1n; fee <= 3000n; fee++) {
        const gross = smallestGrossForFee(fee, bps)!;
        expect(feeOf(gross, bps), `fee ${fee} at ${bps} bps`).to.be.at.least(fee);
        expect(feeOf(gross - 1n, bps), `fee ${fee} at ${bps} bps is not minimal`).to.be.below(fee);
      }
    }
    expect(smallestGrossForFee(1n, 0n), "no gross pays a fee without a take").to.equal(undefined);
    expect(smallestGrossForFee(0n, 0n)).to.equal(1n);
  });

  it("parses a decimal USDC price into atomic USDC", function () {
    expect(parseUsdc("3000")).to.equal(3_000_000_000n);
    expect(parseUsdc("0.000001")).to.equal(1n);
    expect(parseUsdc("12.5")).to.equal(12_500_000n);
  });
});

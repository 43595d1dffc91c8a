import { expect } from "chai";
import { measureTabGas, TAB_REQUESTS } from "../../bench/gas/tab-gas.js";

describe("bench:gas's private tab rows", function () {
  it(`cost at most 10k gas a request over ${TAB_REQUESTS} requests, open to refund`, async function () {
    const gas = await measureTabGas();
    for (const figure of Object.values(gas)) expect(figure).to.be.above(0);
    expect(gas.perRequest).to.be.at.most(10_000);
    console.log(`      ${JSON.stringify(gas)}`);
  });
});

import { expect } from "chai";
import { freePort } from "../../scripts/demo/processes.js";
import { spawnService } from "../helpers/service-process.js";

/** The README's first command, as a newcomer runs it: every process real, on a fresh hardhat node. */
describe("npm run demo: the main job end to end", function () {
  it("starts the chain, contracts, indexer, relayer and sellers, and an agent pays a seller by shielded proof and v2 and v1 sellers through the detour, privately", async function () {
    const demo = spawnService("scripts/demo/main.ts", [], { DEMO_CHAIN_PORT: String(await freePort()) });
    const outcome = await demo.exited;
    const output = demo.lines.join("\n");
    expect(outcome, output).to.equal(0);
    const steps = demo.lines.map((line) => /^\[([a-z0-9]+)\]/.exec(line)?.[1]).filter((step) => step !== undefined);
    const shielded = ["agent", "402", "prove", "privacy", "retry", "200", "check"];
    const payment = ["agent", "402", "probe", "prove", "settle", "privacy", "retry", "200", "check"];
    expect(steps, output).to.deep.equal([
      "logs", "chain", "deploy", "deploy", "deploy", "deploy", "indexer", "relayer", "seller", "agent", "deposit", "asp",
      ...shielded, ...payment, ...payment, "done",
    ]);
    expect(output).to.match(/\[200\] .*the pool paid the seller, one transaction, in 0x[0-9a-f]{64}/);
    expect(output).to.match(/\[200\] +\{"report":\{"weather":"sunny","temperature":70\}\}/);
    expect(output).to.contain("NOT private");
  });
});

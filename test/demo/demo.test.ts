import { expect } from "chai";
import { freePort } from "../../scripts/demo/processes.js";
import { spawnService } from "../helpers/service-process.js";

/** The README's first command, as a newcomer runs it: every process real, on a fresh hardhat node. */
describe("npm run demo: the main job end to end", function () {
  it("starts the chain, contracts, indexer, relayer and sellers, and an agent pays a seller by shielded proof, v2 and v1 sellers through the detour, and 20 requests on a private tab, privately", async function () {
    const demo = spawnService("scripts/demo/main.ts", [], { DEMO_CHAIN_PORT: String(await freePort()) });
    const outcome = await demo.exited;
    const output = demo.lines.join("\n");
    expect(outcome, output).to.equal(0);
    const steps = demo.lines.map((line) => /^\[([a-z0-9]+)\]/.exec(line)?.[1]).filter((step) => step !== undefined);
    const shielded = ["agent", "402", "prove", "roots", "privacy", "retry", "200", "check"];
    const payment = ["agent", "402", "probe", "prove", "roots", "settle", "privacy", "retry", "200", "check"];
    const tab = ["agent", "402", "prove", "roots", "settle", "privacy", "tab", "tab", "who"];
    expect(steps, output).to.deep.equal([
      "logs", "chain", "deploy", "deploy", "deploy", "deploy", "deploy", "indexer", "relayer", "seller", "agent", "deposit", "asp",
      ...shielded, ...payment, ...payment, ...tab, "done",
    ]);
    // The tab: one proof and one transaction (the relay that deposits into the channel), then none for 19 requests.
    expect(output).to.match(/\[tab\] +request 1 opened the tab: one proof, 1 transaction /);
    expect(output).to.match(/\[tab\] +requests 2-20: a voucher of the tab's key each, 0 transactions, p50 \d+ ms/);
    expect(output).to.match(/\[200\] .*the pool paid the seller, one transaction, in 0x[0-9a-f]{64}/);
    expect(output).to.match(/\[200\] +\{"report":\{"weather":"sunny","temperature":70\}\}/);
    // Each payment's own anonymity set (the agent is the pool's only depositor), and roots the agent read itself.
    expect(output.match(/\[privacy\] +NOT private: (the association set holds )?1 independent depositor\(s\) (hold deposits that|whose deposits) could have funded this payment/g), output).to.have.length(4);
    expect(output.match(/\[roots\] +proved against roots.* no older than the pool's at block \d+, read by the agent's own RPC/g), output).to.have.length(4);
  });
});

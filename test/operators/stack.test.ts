import { spawnSync } from "node:child_process";
import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import { expect } from "chai";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { JsonRpcProvider } from "ethers";
import hre from "hardhat";
import { writeAddressBook } from "../../lib/address-book.js";
import { deployFacilitator } from "../../scripts/deploy/deploy-facilitator.js";
import { answersJsonRpc, freePort, startService, waitFor, type ServiceProcess } from "../../scripts/demo/processes.js";
import { DEV_ROLES, devAccount } from "../../scripts/stack/dev-accounts.js";
import { startStack, type StackInfo } from "../../scripts/stack/stack.js";
import { Entrypoint__factory } from "../../types/ethers-contracts/index.js";
import { hasPromtool, promtool } from "../helpers/promtool.js";
import { payASellerThrough } from "./helpers/stack-payment.js";
import { startStackProcess } from "./helpers/stack-process.js";

/** Whether any process still running has `needle` in its environment (every service of a stack has its folder). */
async function processesMentioning(needle: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^[0-9]+$/.test(entry) || Number(entry) === process.pid) continue;
    const environ = await readFile(`/proc/${entry}/environ`, "latin1").catch(() => "");
    if (environ.includes(needle)) found.push(Number(entry));
  }
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("npm run stack: the local system in one command", function () {
  it("starts chain, contracts, indexer and relayer with their metrics (and a Prometheus where one is installed), takes one payment, and leaves no process behind on Ctrl-C", async function () {
    // Free ports for the metrics (the defaults are fixed: another stack on this machine may hold them).
    const withPrometheus = spawnSync("prometheus", ["--version"]).error === undefined;
    const { stack, logDir } = await startStackProcess({
      STACK_RELAYER_METRICS_PORT: "0",
      STACK_INDEXER_METRICS_PORT: "0",
      ...(withPrometheus && { STACK_PROMETHEUS: "1", STACK_PROMETHEUS_PORT: "0" }),
    });
    const output = stack.lines.join("\n");
    for (const name of ["RPC_URL", "RELAYER_URL", "INDEXER_URL", "INDEXER_TOKEN", "RELAYER_METRICS_URL", "INDEXER_METRICS_URL", "ADDRESS_BOOK", "ENTRYPOINT", "PRIVACY_POOL", "USDC", "BATCH_SETTLEMENT", "SELLER_EIP3009_SETTLER", "SELLER_SETTLER_KEY", "SELLER_RELAY_KEY"]) {
      expect(output).to.match(new RegExp(`^  ${name}=\\S+$`, "m"));
    }
    expect(logDir, output).to.be.a("string");
    const info = JSON.parse(await readFile(path.join(logDir!, "stack.json"), "utf8")) as StackInfo;
    expect(output).to.contain(`RELAYER_URL=${info.relayerUrl}`);

    // Both services are ready; the relaying key holds no role (its sweep's calls are anyone's).
    const provider = new JsonRpcProvider(info.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
    expect((await fetch(`${info.relayerUrl}/health/ready`)).status).to.equal(200);
    expect((await fetch(`${info.indexerUrl}/health/ready`)).status).to.equal(200);
    const entrypoint = Entrypoint__factory.connect(info.contracts.entrypoint, provider);
    const relayingKey = devAccount(DEV_ROLES.relayer).address;
    for (const role of [await entrypoint.DEFAULT_ADMIN_ROLE(), await entrypoint.POSTMAN_ROLE()]) expect(await entrypoint.hasRole(role, relayingKey)).to.equal(false);
    // What the sellers' guide builds on: x402's batch-settlement contract where @x402/evm looks for it, and seller
    // routes that settle plain buyers from a key of their own.
    expect(output).to.contain(`BATCH_SETTLEMENT=${BATCH_SETTLEMENT_ADDRESS}`);
    expect(await provider.getCode(BATCH_SETTLEMENT_ADDRESS)).to.not.equal("0x");
    expect(output).to.contain(`SELLER_EIP3009_SETTLER=${info.sellerEip3009Settler}`);
    const supported = (await (await fetch(`${info.relayerUrl}/api/seller/supported`)).json()) as { signers: Record<string, string[]> };
    expect(Object.values(supported.signers).flat()).to.include(info.sellerEip3009Settler);

    // Metrics on, where it printed them, and a Prometheus configuration for them.
    expect(output).to.contain(`RELAYER_METRICS_URL=${info.relayerMetricsUrl}`);
    expect(await (await fetch(info.relayerMetricsUrl)).text()).to.match(/^relayer_ready\{check="indexer"\} 1$/m);
    expect(await (await fetch(info.indexerMetricsUrl)).text()).to.match(/^indexer_ready\{check="synced"\} 1$/m);
    if (hasPromtool()) expect(promtool(["check", "config", info.prometheusConfigFile])).to.contain("SUCCESS");
    if (withPrometheus) {
      expect(output).to.contain(`PROMETHEUS_URL=${info.prometheusUrl}`);
      const api = async <T>(route: string) => ((await (await fetch(`${info.prometheusUrl}${route}`)).json()) as { data: T }).data;
      await waitFor("Prometheus scraping both services", async () => {
        const { activeTargets } = await api<{ activeTargets: { labels: { job: string }; health: string }[] }>("/api/v1/targets");
        return ["relayer", "indexer"].every((job) => activeTargets.some((target) => target.labels.job === job && target.health === "up"));
      }, 60_000);
      const { groups } = await api<{ groups: { rules: { type: string }[] }[] }>("/api/v1/rules");
      expect(groups.flatMap((group) => group.rules).filter((rule) => rule.type === "alerting")).to.have.length.above(15);
    }

    // One payment through it: an x402 seller settled by the reference facilitator, paid by an agent's note.
    provider.destroy();
    await payASellerThrough(info, logDir!);

    // SIGTERM, as Ctrl-C's SIGINT: the stack stops every service and exits cleanly.
    expect(await stack.stop()).to.equal(0);
    expect(stack.lines.join("\n")).to.contain("stopped");
    expect(Object.values(info.pids).filter(alive)).to.deep.equal([]);
    expect(await processesMentioning(logDir!)).to.deep.equal([]);
    expect(await answersJsonRpc(info.rpcUrl)().catch(() => false)).to.equal(false);
    await rm(logDir!, { recursive: true, force: true });
  });

  it("stops at once, with the end of its log, when a service exits at start (a postman key without the role)", async function () {
    const dir = await mkdtemp(path.join(tmpdir(), "stack-exit-"));
    const services: ServiceProcess[] = [];
    try {
      const port = await freePort();
      const rpcUrl = `http://127.0.0.1:${port}`;
      services.push(startService("node", "hardhat", ["node", "--hostname", "127.0.0.1", "--port", String(port)], {}, dir));
      await waitFor("the node", answersJsonRpc(rpcUrl));
      const connection = await hre.network.create({ network: "localhost", override: { url: rpcUrl } });
      const { addressBook } = await deployFacilitator(connection, { deploymentId: `stack-exit-${path.basename(dir)}` });
      await connection.close();
      await rm(path.join(hre.config.paths.ignition, "deployments", `stack-exit-${path.basename(dir)}`), { recursive: true, force: true });
      const addressBookFile = await writeAddressBook(addressBook, dir);

      const refused = await startStack({
        rpcUrl,
        addressBook: addressBookFile,
        postmanPrivateKey: devAccount(3).privateKey,
        variables: { addressBook: "ADDRESS_BOOK", postmanPrivateKey: "POSTMAN_PRIVATE_KEY", relayerPrivateKey: "RELAYER_PRIVATE_KEY", treasury: "TREASURY_ADDRESS" },
        logDir: dir,
        say: () => {},
      }).then(
        () => undefined,
        (error: Error) => error,
      );
      expect(refused?.message).to.match(/^indexer exited \(code 1\); last lines of .*indexer\.log:/);
      expect(refused?.message).to.contain("does not hold POSTMAN_ROLE on the entrypoint");
    } finally {
      for (const service of services) await service.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { JsonRpcProvider } from "ethers";
import hre from "hardhat";
import { addressBookPath, readAddressBook } from "../../lib/address-book.js";
import { assessProvingKey } from "../../scripts/circuits/key-trust.js";
import { CIRCLE_USDC } from "../../scripts/deploy/usdc.js";
import { answers, freePort, startService, waitFor, type ServiceProcess } from "../../scripts/demo/processes.js";
import { TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import { verifyDeployment } from "../../scripts/verify-deployment/verify-deployment.js";
import { forgeLaunchKey } from "../helpers/forged-launch-key.js";
import { runCommand } from "../helpers/run-command.js";

const BASE = 8453;

/** TestUSDC's runtime code, to stand in at Circle's address on a bare node with Base's chain id. */
async function testUsdcRuntimeCode(): Promise<string> {
  return (await hre.artifacts.readArtifact("TestUSDC")).deployedBytecode;
}

/** `hardhat run <script>` as an operator runs it: a separate process, told where the chain is by its environment. */
function runScript(script: string, env: Record<string, string>) {
  return runCommand(path.resolve("node_modules/.bin/hardhat"), ["run", script], { env });
}

/** `npm run deploy`, told where the chain is by RPC_URL alone. */
function deployTo(rpcUrl: string, deploymentsDir: string, deploymentId: string, env: Record<string, string> = {}) {
  return runScript("scripts/deploy/main.ts", { RPC_URL: rpcUrl, DEPLOYMENTS_DIR: deploymentsDir, DEPLOYMENT_ID: deploymentId, ...env });
}

describe("deploy: any RPC by RPC_URL", function () {
  let dir: string;
  const nodes: ServiceProcess[] = [];
  const deploymentIds: string[] = [];

  before(async function () {
    dir = await mkdtemp(path.join(tmpdir(), "deploy-rpc-"));
  });

  after(async function () {
    await Promise.all(nodes.map((node) => node.stop()));
    for (const id of deploymentIds) await rm(path.join(hre.config.paths.ignition, "deployments", id), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  });

  async function node(args: string[]): Promise<string> {
    const port = await freePort();
    nodes.push(startService(`node-${port}`, "hardhat", ["node", "--hostname", "127.0.0.1", "--port", String(port), ...args], {}, dir));
    const rpcUrl = `http://127.0.0.1:${port}`;
    const chainIdRequest = { method: "POST", headers: { "content-type": "application/json" }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' };
    await waitFor(`the node on ${port}`, answers(rpcUrl, chainIdRequest));
    return rpcUrl;
  }

  async function deployAndRead(rpcUrl: string, chainId: number, env: Record<string, string> = {}) {
    const deploymentId = `test-deploy-${path.basename(dir)}-${chainId}`;
    deploymentIds.push(deploymentId);
    const { code, output } = await deployTo(rpcUrl, dir, deploymentId, env);
    expect(code, output).to.equal(0);
    const book = await readAddressBook(chainId, dir);
    expect(book, output).to.not.equal(undefined);
    return { book: book!, output };
  }

  it("deploys to a node on a non-default port", async function () {
    const rpcUrl = await node([]);
    expect(rpcUrl).to.not.match(/:8545$/);
    const { book, output } = await deployAndRead(rpcUrl, 31337);
    expect(output).to.contain(`proving key: ${(await assessProvingKey()).description}`);
    const provider = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true });
    expect(await provider.getCode(book.privacyPool)).to.not.equal("0x");
    provider.destroy();

    // `npm run verify:deployment` checks it from the chain alone.
    const verified = await runScript("scripts/verify-deployment/main.ts", { RPC_URL: rpcUrl, ADDRESS_BOOK: addressBookPath(31337, dir) });
    expect(verified.code, verified.output).to.equal(0);
    expect(verified.output).to.match(/all \d+ checks pass/).and.to.contain(`role POSTMAN_ROLE`);
  });

  it("deploys TestUSDC on a node with Base Sepolia's chain id but no Circle USDC", async function () {
    const rpcUrl = await node(["--chain-id", "84532"]);
    const { book, output } = await deployAndRead(rpcUrl, 84532);
    expect(book.usdc).to.not.equal(CIRCLE_USDC[84532]);
    expect(output).to.contain("using TestUSDC");
    const provider = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true });
    const token = TestUSDC__factory.connect(book.usdc, provider);
    expect(await token.owner()).to.equal(book.deployer);
    expect(await provider.getCode(book.privacyPool)).to.not.equal("0x");
    provider.destroy();
  });

  it("refuses Base (chain 8453) a key that lacks anything, and deploys there with ALLOW_UNTRUSTED_KEY=1 only onto Circle's USDC", async function () {
    const key = await assessProvingKey();
    if (key.lacks.length === 0) this.skip(); // the committed key is a production key: nothing to refuse
    const rpcUrl = await node(["--chain-id", "8453"]);
    const refused = await deployTo(rpcUrl, dir, `test-deploy-${path.basename(dir)}-refused`);
    expect(refused.code, refused.output).to.equal(1);
    expect(refused.output).to.contain("refusing to deploy to chain 8453");
    for (const lack of key.lacks) expect(refused.output).to.contain(lack);
    expect(await readAddressBook(8453, dir)).to.equal(undefined);
    const provider = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true });
    const deployer = await (await provider.getSigner(0)).getAddress();
    expect(await provider.getTransactionCount(deployer)).to.equal(0);

    // A bare node with Base's chain id has no Circle USDC: no TestUSDC takes its place, even for a rehearsal.
    const noUsdc = await deployTo(rpcUrl, dir, `test-deploy-${path.basename(dir)}-no-usdc`, { ALLOW_UNTRUSTED_KEY: "1" });
    deploymentIds.push(`test-deploy-${path.basename(dir)}-no-usdc`);
    expect(noUsdc.code, noUsdc.output).to.equal(1);
    expect(noUsdc.output).to.contain(`Circle's USDC (${CIRCLE_USDC[BASE]}) has no code on it: refusing to deploy a TestUSDC in its place`);
    expect(noUsdc.output).to.not.contain("using TestUSDC");
    expect(await provider.getTransactionCount(deployer)).to.equal(0);

    // With code at Circle's address (what a fork of Base has), the rehearsal deploys onto it, warning.
    await provider.send("hardhat_setCode", [CIRCLE_USDC[BASE], await testUsdcRuntimeCode()]);
    const { book, output } = await deployAndRead(rpcUrl, BASE, { ALLOW_UNTRUSTED_KEY: "1" });
    provider.destroy();
    expect(output).to.contain("WARNING: ALLOW_UNTRUSTED_KEY=1 deploys to production chain 8453 with an UNTRUSTED proving key");
    expect(book.usdc).to.equal(CIRCLE_USDC[BASE]);
    // What the rehearsal deployed is no production deployment: verify:deployment says why.
    const verified = await runScript("scripts/verify-deployment/main.ts", { RPC_URL: rpcUrl, ADDRESS_BOOK: addressBookPath(BASE, dir) });
    expect(verified.code, verified.output).to.equal(1);
    expect(verified.output).to.match(/proving key \(sdk\/artifacts\) .*\| MISMATCH/).and.to.match(/USDC \(Circle's on this chain\) .*\| ok/);

    // The committed development key dressed as a launch key, every file of it consistent: verify:deployment judges its
    // phase 1 by the key's own alpha and beta on this production chain, as the guard does.
    const { paths: forged } = await forgeLaunchKey(await mkdtemp(path.join(dir, "forged-")));
    const onChain = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true });
    const checks = await verifyDeployment({ provider: onChain, book, artifacts: hre.artifacts, keyPaths: forged });
    onChain.destroy();
    expect(checks.find((check) => check.check.startsWith("proving key files agree"))).to.deep.include({ ok: true });
    const judged = checks.find((check) => check.check === "proving key (sdk/artifacts)");
    expect(judged).to.deep.include({ ok: false });
    expect(judged!.found).to.contain("Mallory, Mallory's friend)").and.to.contain("as the key's own alpha and beta show");
  });

  it("git-ignores the Ignition journals of a DEPLOYMENT_ID run and of the local chain, and no other chain's", async function () {
    const ignored = async (file: string) => (await runCommand("git", ["check-ignore", "-q", path.join("ignition", "deployments", file)])).code === 0;
    expect(await ignored("launch-rehearsal/journal.jsonl")).to.equal(true);
    expect(await ignored("chain-31337/journal.jsonl")).to.equal(true);
    expect(await ignored("chain-8453/journal.jsonl")).to.equal(false);
  });
});

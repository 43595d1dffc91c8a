import { expect } from "chai";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { JsonRpcProvider, Wallet, toBeHex } from "ethers";
import hre from "hardhat";
import { addressBookPath, readAddressBook } from "../../lib/address-book.js";
import { answersJsonRpc, freePort, startService, waitFor, type ServiceProcess } from "../../scripts/demo/processes.js";
import { CIRCLE_USDC } from "../../scripts/deploy/usdc.js";
import { DEV_ROLES, devAccount } from "../../scripts/stack/dev-accounts.js";
import { startStack } from "../../scripts/stack/stack.js";
import { TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import { payASellerThrough } from "./helpers/stack-payment.js";

const BASE_SEPOLIA_USDC = CIRCLE_USDC[84532]!;
/** TestUSDC's storage slots: ERC20's balances, allowances, supply, name and symbol, EIP712's fallbacks, the owner. */
const TOKEN_SLOTS = 12;

describe("a fork of a chain holding Circle's USDC (npm run chain:fork), offline", function () {
  let dir: string;
  const services: ServiceProcess[] = [];
  const deploymentId = `test-fork-${Date.now()}`;

  before(async function () {
    dir = await mkdtemp(path.join(tmpdir(), "fork-"));
  });
  after(async function () {
    for (const service of services.reverse()) await service.stop();
    await rm(path.join(hre.config.paths.ignition, "deployments", deploymentId), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  });

  async function node(name: string, args: string[], env: Record<string, string> = {}): Promise<string> {
    const port = await freePort();
    services.push(startService(name, "hardhat", ["node", "--hostname", "127.0.0.1", ...args, "--port", String(port)], env, dir));
    const rpcUrl = `http://127.0.0.1:${port}`;
    await waitFor(name, answersJsonRpc(rpcUrl), 120_000);
    return rpcUrl;
  }

  it("deploys on the fork with the USDC it finds at Circle's address, and an agent pays a seller there", async function () {
    // The upstream: a node with Base Sepolia's id and chain type whose token at Circle's address is TestUSDC's code
    // and state (its owner, the first development account, can mint).
    const upstream = await node("upstream", ["--chain-id", "84532", "--chain-type", "op"]);
    const provider = new JsonRpcProvider(upstream, undefined, { staticNetwork: true, cacheTimeout: -1 });
    const deployer = new Wallet(devAccount(DEV_ROLES.deployer).privateKey, provider);
    const token = await (await new TestUSDC__factory(deployer).deploy(deployer.address)).waitForDeployment();
    const tokenAddress = await token.getAddress();
    await provider.send("hardhat_setCode", [BASE_SEPOLIA_USDC, await provider.getCode(tokenAddress)]);
    for (let slot = 0; slot < TOKEN_SLOTS; slot++) {
      await provider.send("hardhat_setStorageAt", [BASE_SEPOLIA_USDC, toBeHex(slot, 32), await provider.getStorage(tokenAddress, slot)]);
    }
    await provider.send("evm_mine", []);
    provider.destroy();

    // The fork as `npm run chain:fork` starts it (its command, FORK_URL), and `npm run deploy` on it.
    const fork = await node("fork", ["--network", "baseFork"], { FORK_URL: upstream });
    const deploy = spawn(path.resolve("node_modules/.bin/hardhat"), ["run", "scripts/deploy/main.ts"], {
      env: {
        ...process.env,
        RPC_URL: fork,
        DEPLOYMENTS_DIR: dir,
        DEPLOYMENT_ID: deploymentId,
        POSTMAN_ADDRESS: devAccount(DEV_ROLES.postman).address,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    for (const stream of [deploy.stdout, deploy.stderr]) stream.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(deploy, "exit")) as [number | null];
    expect(code, output).to.equal(0);
    expect(output).to.contain(`Circle's USDC at ${BASE_SEPOLIA_USDC}`);
    expect((await readAddressBook(31337, dir))?.usdc).to.equal(BASE_SEPOLIA_USDC);

    // The indexer and the relayer on the fork (the stack against an existing chain), and one payment through them.
    const logDir = await mkdtemp(path.join(dir, "stack-"));
    const stack = await startStack({
      rpcUrl: fork,
      addressBook: addressBookPath(31337, dir),
      variables: { addressBook: "ADDRESS_BOOK", postmanPrivateKey: "POSTMAN_PRIVATE_KEY", relayerPrivateKey: "RELAYER_PRIVATE_KEY", treasury: "TREASURY_ADDRESS" },
      logDir,
      say: () => {},
    });
    try {
      await payASellerThrough(stack, logDir);
    } finally {
      await stack.stop();
    }
  });
});

import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { expect } from "chai";
import { JsonRpcProvider, Wallet } from "ethers";
import { waitFor } from "../../scripts/demo/processes.js";
import { DEV_ROLES, devAccount } from "../../scripts/stack/dev-accounts.js";
import type { StackInfo } from "../../scripts/stack/stack.js";
import { TestUSDC__factory, type TestUSDC } from "../../types/ethers-contracts/index.js";
import type { LocalServer } from "../../x402-peers/local-server.js";
import { redisCommand } from "../helpers/redis-command.js";
import { installPackedProject, repositoryVersion, type PackedProject } from "../helpers/packed-project.js";
import type { ServiceProcess } from "../helpers/service-process.js";
import { stackAgent } from "../operators/helpers/stack-payment.js";
import { startStackProcess } from "../operators/helpers/stack-process.js";
import { expectAbsentFrom } from "./helpers/absent-from.js";
import { GUIDE, guideAddedPackages, guideBlockUnder, guideProjectSetup, runGuideProgram, runGuideSeller } from "./helpers/guide-seller.js";
import { plainBuyerOn } from "./helpers/plain-buyer.js";

/** The guide's price: 0.01 USDC. */
const GUIDE_PRICE = 10_000n;
/** What the guide's "Try it on npm run stack" table gives a facilitator of one's own on the stack. */
const STACK_FACILITATOR_TERMS = { USDC_PER_ETH: "2000000", MINIMUM_FEE: "5000" };
const REDIS_URL = "redis://127.0.0.1:6379";

/**
 * The project the guide makes, in an empty folder outside the repository: its Install block's commands, the seller
 * package packed, the x402 packages from the registry at the repository's version, and the packages its sections add.
 */
async function installGuideProject(): Promise<PackedProject> {
  const x402 = await repositoryVersion("@x402/core");
  const registry = [...["core", "evm", "express"].map((name) => `@x402/${name}@${x402}`), `express@${await repositoryVersion("express")}`, ...(await guideAddedPackages())];
  return installPackedProject(["seller"], registry, { installScripts: false, ...(await guideProjectSetup()) });
}

describe(`the sellers' guide (${GUIDE}) run from an empty directory against npm run stack, with the values the stack prints`, function () {
  let stack: ServiceProcess;
  let installed: PackedProject;
  let printed: Record<string, string>;
  let logDir: string | undefined;
  /** The stack's stack.json: where the agents of these tests (not the guide's programs) find it. */
  let info: StackInfo;
  let provider: JsonRpcProvider;
  let usdc: TestUSDC;
  let agentsDir: string;
  const running: LocalServer[] = [];

  before(async function () {
    const [started, packed] = await Promise.allSettled([startStackProcess({ STACK_RELAYER_METRICS_PORT: "0", STACK_INDEXER_METRICS_PORT: "0" }), installGuideProject()]);
    if (started.status === "fulfilled") ({ stack, printed, logDir } = started.value);
    if (packed.status === "fulfilled") installed = packed.value;
    for (const outcome of [started, packed]) if (outcome.status === "rejected") throw outcome.reason;
    info = JSON.parse(await readFile(path.join(logDir!, "stack.json"), "utf8")) as StackInfo;
    provider = new JsonRpcProvider(printed.RPC_URL, undefined, { staticNetwork: true, cacheTimeout: -1 });
    // The local chain's TestUSDC mints to anyone its deployer (a development account) names.
    usdc = TestUSDC__factory.connect(printed.USDC!, new Wallet(devAccount(DEV_ROLES.deployer).privateKey, provider));
    agentsDir = await mkdtemp(path.join(tmpdir(), "guide-agents-"));
  });
  after(async function () {
    for (const server of running) await server.close();
    provider?.destroy();
    await stack?.stop();
    if (logDir !== undefined) await rm(logDir, { recursive: true, force: true });
    await installed?.cleanup();
    if (agentsDir !== undefined) await rm(agentsDir, { recursive: true, force: true });
  });

  const chainId = () => info.chainId;
  const network = () => `eip155:${chainId()}`;
  const balanceOf = (address: string) => usdc.balanceOf(address);
  /** `server`, stopped after the tests. */
  const started = (server: LocalServer) => {
    running.push(server);
    return server;
  };

  /** A guide program started with the stack's values for it. */
  async function startGuideSeller(code: string, env: Record<string, string>): Promise<LocalServer> {
    return started(await runGuideSeller(code, installed.project, { NETWORK: network(), USDC: printed.USDC!, REFERENCE_SECRET: randomBytes(32).toString("hex"), ...env }));
  }

  /** An agent on the stack (stackAgent) that checks its roots against the stack's chain and pays tabs too. */
  async function privateAgent(value: bigint) {
    const dir = await mkdtemp(path.join(agentsDir, "agent-"));
    return stackAgent(info, provider, value, path.join(dir, "notes.vault"), {
      ownRpc: { url: printed.RPC_URL!, privacyPool: printed.PRIVACY_POOL! },
      tabs: { channelDirectory: path.join(dir, "tabs") },
    });
  }

  /** A plain buyer, then a private agent, pay the seller at `url`: `payTo` is up by exactly the price each time. Returns both settlements. */
  async function expectPaidBothWays(url: string, payTo: string) {
    const buyer = await plainBuyerOn({ chainId: chainId(), asset: printed.USDC!, usdc }, GUIDE_PRICE);
    const plain = await buyer.fetch(url);
    expect(plain.status).to.equal(200);
    expect(await plain.json()).to.deep.equal({ weather: "sunny" });
    const plainSettlement = decodePaymentResponseHeader(plain.headers.get("PAYMENT-RESPONSE")!);
    expect(plainSettlement.payer?.toLowerCase()).to.equal(buyer.address.toLowerCase());
    expect(await balanceOf(payTo)).to.equal(GUIDE_PRICE);

    const { agent, address, notes } = await privateAgent(1_000_000n);
    try {
      const shielded = await agent.fetch(url);
      expect(shielded.status).to.equal(200);
      const privateSettlement = decodePaymentResponseHeader(shielded.headers.get("PAYMENT-RESPONSE")!);
      expect(privateSettlement.payer).to.equal(printed.PRIVACY_POOL);
      await expectAbsentFrom(provider, privateSettlement.transaction, address);
      expect(await balanceOf(payTo)).to.equal(2n * GUIDE_PRICE);
      return { plain: plainSettlement, private: privateSettlement };
    } finally {
      await notes.close();
    }
  }

  const senderOf = async (hash: string) => (await provider.getTransaction(hash))!.from;

  it("the stack prints every value the guide's table names", function () {
    for (const name of ["RPC_URL", "RELAYER_URL", "ADDRESS_BOOK", "USDC", "PRIVACY_POOL", "SELLER_EIP3009_SETTLER", "SELLER_SETTLER_KEY", "SELLER_RELAY_KEY"]) {
      expect(printed, name).to.have.property(name);
    }
  });

  it("the minimal seller on the stack's seller routes ($RELAYER_URL/api/seller): a plain buyer, settled from SELLER_EIP3009_SETTLER, and a private agent, paid by the pool", async function () {
    const payTo = Wallet.createRandom().address;
    const seller = await startGuideSeller(await guideBlockUnder("A minimal seller"), { FACILITATOR_URL: `${printed.RELAYER_URL}/api/seller`, PAY_TO: payTo });
    const settlements = await expectPaidBothWays(`${seller.url}/weather`, payTo);
    expect(await senderOf(settlements.plain.transaction)).to.equal(printed.SELLER_EIP3009_SETTLER);
  });

  describe("a facilitator of one's own, as the guide writes it, with the stack's development keys", function () {
    let facilitator: LocalServer;
    const settler = () => new Wallet(printed.SELLER_SETTLER_KEY!).address;
    const relay = () => new Wallet(printed.SELLER_RELAY_KEY!).address;

    before(async function () {
      facilitator = started(
        await runGuideProgram(
          await guideBlockUnder("A facilitator of one's own"),
          installed.project,
          { RPC_URL: printed.RPC_URL!, ADDRESS_BOOK: printed.ADDRESS_BOOK!, SETTLER_KEY: printed.SELLER_SETTLER_KEY!, RELAY_KEY: printed.SELLER_RELAY_KEY!, ...STACK_FACILITATOR_TERMS },
          { file: "facilitator.ts", readyPath: "/supported" },
        ),
      );
    });

    it("settles the minimal seller's plain buyer from SETTLER_KEY and relays its private agent from RELAY_KEY", async function () {
      const payTo = Wallet.createRandom().address;
      const seller = await startGuideSeller(await guideBlockUnder("A minimal seller"), { FACILITATOR_URL: facilitator.url, PAY_TO: payTo });
      const settlements = await expectPaidBothWays(`${seller.url}/weather`, payTo);
      expect(await senderOf(settlements.plain.transaction)).to.equal(settler());
      expect(await senderOf(settlements.private.transaction)).to.equal(relay());
    });

    /** The guide's tab seller, as `count` instances sharing `env`; the first claims every 2 s, the others never. */
    async function startTabSellers(count: number, env: Record<string, string>): Promise<LocalServer[]> {
      const code = await guideBlockUnder("A seller accepting tabs");
      const instances: LocalServer[] = [];
      for (let instance = 0; instance < count; instance++) {
        const claims = instance === 0 ? "2" : "0";
        instances.push(started(await runGuideProgram(code, installed.project, { FACILITATOR_URL: facilitator.url, NETWORK: network(), USDC: printed.USDC!, CLAIM_EVERY_SECONDS: claims, ...env }, { file: "tab-seller.ts" })));
      }
      return instances;
    }

    /**
     * A private agent pays `urls` in turn on one tab: every request served, the first opening the tab out of its note,
     * the rest vouchers; no answer names the agent; the claims bring PAY_TO exactly the price of each request.
     */
    async function expectPaidOnOneTab(urls: string[], payTo: string) {
      const { agent, address, notes } = await privateAgent(1_500_000n);
      try {
        const payers = new Set<string>();
        for (const url of urls) {
          const response = await agent.fetch(url);
          expect(response.status, url).to.equal(200);
          expect(await response.json()).to.deep.equal({ weather: "sunny" });
          payers.add(decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!).payer!.toLowerCase());
        }
        // One channel, one payer for every request: the tab's, never the agent.
        expect(payers.size).to.equal(1);
        expect([...payers]).to.not.include(address.toLowerCase());
        // The opening is the only spend of the agent's note: one tab for every request and instance.
        expect((await notes.list()).filter((entry) => entry.spent)).to.have.length(1);
        const owed = BigInt(urls.length) * GUIDE_PRICE;
        await waitFor(`the seller's claims settling ${owed} to PAY_TO`, async () => (await balanceOf(payTo)) === owed, 60_000);
      } finally {
        await notes.close();
      }
    }

    it("takes a private tab on one instance (channels in files): the requests served, PAY_TO paid for each by its claims", async function () {
      const payTo = Wallet.createRandom().address;
      const [seller] = await startTabSellers(1, { PAY_TO: payTo, RECEIVER_AUTHORIZER_KEY: Wallet.createRandom().privateKey });
      await expectPaidOnOneTab([1, 2, 3].map(() => `${seller!.url}/weather`), payTo);
      expect(await balanceOf(payTo)).to.equal(3n * GUIDE_PRICE);
    });

    it("takes one private tab on two instances sharing Redis, its requests alternating between them: each served, PAY_TO paid once for each, the channel kept in Redis only", async function () {
      const payTo = Wallet.createRandom().address;
      const channelFiles = async () => readdir(path.join(installed.project, "channels")).catch(() => []);
      const filesBefore = await channelFiles();
      const instances = await startTabSellers(2, { PAY_TO: payTo, RECEIVER_AUTHORIZER_KEY: Wallet.createRandom().privateKey, REDIS_URL });
      try {
        await expectPaidOnOneTab([0, 1, 0, 1].map((index) => `${instances[index]!.url}/weather`), payTo);
        // Claimed once: nothing more arrives after the claims caught up.
        await new Promise((resolve) => setTimeout(resolve, 5_000));
        expect(await balanceOf(payTo)).to.equal(4n * GUIDE_PRICE);
        // The one record both instances charged is in Redis, under the guide's prefix, and in neither's files.
        expect(await redisCommand(REDIS_URL, "KEYS", `x402-tabs:${payTo}*`)).to.have.length.above(0);
        expect(await channelFiles()).to.deep.equal(filesBefore);
      } finally {
        const keys = (await redisCommand(REDIS_URL, "KEYS", `x402-tabs:${payTo}*`)) as string[];
        if (keys.length > 0) await redisCommand(REDIS_URL, "DEL", ...keys);
      }
    });
  });
});

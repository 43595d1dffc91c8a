import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { expect } from "chai";
import { Wallet } from "ethers";
import type { LocalServer } from "../../x402-peers/local-server.js";
import { expectAbsentFrom } from "./helpers/absent-from.js";
import { GUIDE, guideSellers, runGuideSeller } from "./helpers/guide-seller.js";
import { plainBuyer } from "./helpers/plain-buyer.js";
import { startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";

const run = promisify(execFile);

/** The guide's price: 0.01 USDC. */
const GUIDE_PRICE = 10_000n;

/** An empty ESM project outside the repository, for a seller's own packages. */
async function sellerProject(prefix: string): Promise<string> {
  const project = await mkdtemp(path.join(tmpdir(), prefix));
  await writeFile(path.join(project, "package.json"), `${JSON.stringify({ name: "seller", private: true, type: "module" })}\n`);
  return project;
}

describe(`the sellers' guide (${GUIDE}): its minimal seller, as written, paid by a plain x402 client and by a private agent`, function () {
  let world: PaymentWorld;
  const projects: string[] = [];

  before(async function () {
    world = await startPaymentWorld();
  });
  after(async function () {
    await world?.close();
    for (const project of projects) await rm(project, { recursive: true, force: true });
  });

  /** Runs `code` with the guide's environment, the relayer's seller routes as its facilitator, paying a fresh address. */
  async function startSeller(code: string, project: string): Promise<LocalServer & { payTo: string }> {
    const payTo = Wallet.createRandom().address;
    const seller = await runGuideSeller(code, project, {
      FACILITATOR_URL: `${world.relayer.url}/api/seller`,
      NETWORK: `eip155:${world.chainId}`,
      USDC: world.asset,
      PAY_TO: payTo,
      REFERENCE_SECRET: randomBytes(32).toString("hex"),
    });
    return { ...seller, payTo };
  }

  /** A plain buyer pays `seller`, then a private agent: payTo is up by exactly the price each time. */
  async function expectPaidBothWays(seller: LocalServer & { payTo: string }) {
    const url = `${seller.url}/weather`;
    const buyer = await plainBuyer(world, GUIDE_PRICE);
    const plain = await buyer.fetch(url);
    expect(plain.status).to.equal(200);
    expect(await plain.json()).to.deep.equal({ weather: "sunny" });
    expect(decodePaymentResponseHeader(plain.headers.get("PAYMENT-RESPONSE")!).payer?.toLowerCase()).to.equal(buyer.address.toLowerCase());
    expect(await world.usdcBalance(seller.payTo)).to.equal(GUIDE_PRICE);
    expect(await world.usdcBalance(buyer.address)).to.equal(0n);

    const { agent, address } = await world.newAgent(world.chain.depositors.alice, 1_000_000n);
    const shielded = await agent.fetch(url);
    expect(shielded.status).to.equal(200);
    const settlement = decodePaymentResponseHeader(shielded.headers.get("PAYMENT-RESPONSE")!);
    expect(settlement.payer).to.equal(await world.chain.facilitator.privacyPool.getAddress());
    await expectAbsentFrom(world.provider, settlement.transaction, address);
    expect(await world.usdcBalance(seller.payTo)).to.equal(2n * GUIDE_PRICE);
  }

  it("under @x402/express (the repository's packages): both paid, the price each time", async function () {
    const [express] = await guideSellers();
    const project = await sellerProject("guide-express-");
    projects.push(project);
    await symlink(path.resolve("node_modules"), path.join(project, "node_modules"), "dir");
    const seller = await startSeller(express!, project);
    try {
      await expectPaidBothWays(seller);
    } finally {
      await seller.close();
    }
  });

  it("under @x402/hono, installed from the npm registry at the repository's @x402/core version: both paid, the price each time", async function () {
    const [, hono] = await guideSellers();
    const project = await sellerProject("guide-hono-");
    projects.push(project);
    // The @x402 packages at the repository's own @x402/core version, as the guide's table pairs them.
    const x402 = (JSON.parse(await readFile(path.resolve("node_modules/@x402/core/package.json"), "utf8")) as { version: string }).version;
    const packages = [`@x402/hono@${x402}`, `@x402/core@${x402}`, `@x402/evm@${x402}`, "hono@4", "@hono/node-server@1"];
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("npm_")));
    await run("npm", ["install", "--no-audit", "--no-fund", ...packages], { cwd: project, env: { ...env, npm_config_update_notifier: "false" }, maxBuffer: 1 << 24 });
    const seller = await startSeller(hono!, project);
    try {
      await expectPaidBothWays(seller);
    } finally {
      await seller.close();
    }
  });
});

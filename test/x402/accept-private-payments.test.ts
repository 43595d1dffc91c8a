import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { expect } from "chai";
import { Wallet } from "ethers";
import { NoteVault } from "../../sdk/agent/index.js";
import { SHIELDED_REASONS } from "../../seller/index.js";
import type { LocalServer } from "../../x402-peers/local-server.js";
import { createTestSchema, type TestSchema } from "../helpers/database.js";
import { developerEnv, installPackedProject, repositoryVersion, type PackedProject } from "../helpers/packed-project.js";
import { expectAbsentFrom } from "./helpers/absent-from.js";
import { GUIDE, guideProjectSetup, guideSellers, runGuideSeller } from "./helpers/guide-seller.js";
import { plainBuyer } from "./helpers/plain-buyer.js";
import { AGENT_PASSPHRASE, startPaymentWorld, type PaymentWorld } from "./helpers/payment-world.js";

const run = promisify(execFile);

/** The guide's price: 0.01 USDC. */
const GUIDE_PRICE = 10_000n;

/**
 * A private agent's program (pay-every-instance.mjs in the project), on the packed SDK through @x402/fetch: it pays
 * SELLER_URLS' first instance by shielded proof out of its vault, and sends its paid request, the same payment
 * header, to every instance at once, as a load balancer retrying on another instance might. Prints one JSON line.
 */
const AGENT_PROGRAM = `import { x402Client } from "@x402/core/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { NoteVault, preferShieldedProof, privatePoolScheme, registerPrivatePoolScheme } from "x402-privacy-sdk/agent";
import { FacilitatorClient } from "x402-privacy-sdk/client";

const { FACILITATOR_URL, SELLER_URLS, VAULT_FILE, VAULT_PASSPHRASE, CHAIN_ID, USDC } = process.env;
const instances = SELLER_URLS.split(" ");
const vault = await NoteVault.open(VAULT_FILE, VAULT_PASSPHRASE);
const scheme = privatePoolScheme({ facilitator: new FacilitatorClient(FACILITATOR_URL), notes: vault, network: { chainId: Number(CHAIN_ID), asset: USDC }, acceptNotPrivate: true });
let payment;
const answers = [];
async function toEveryInstance(input, init) {
  const request = new Request(input, init);
  payment = request.headers.get("PAYMENT-SIGNATURE") ?? undefined;
  if (payment === undefined) return fetch(request);
  const responses = await Promise.all(instances.map((url) => fetch(url, { method: request.method, headers: request.headers })));
  for (const response of responses) answers.push(response.status);
  return responses.find((response) => response.status === 200) ?? responses[0];
}
const paidFetch = wrapFetchWithPayment(toEveryInstance, registerPrivatePoolScheme(new x402Client(preferShieldedProof), scheme));
try {
  const response = await paidFetch(instances[0]);
  console.log(JSON.stringify({ status: response.status, body: await response.json(), answers, payment, settlement: response.headers.get("PAYMENT-RESPONSE") }));
} finally {
  await vault.close();
}
`;

/**
 * The seller package and the agent SDK packed, installed with the x402 packages a seller and an agent use, from the
 * npm registry at the repository's @x402/core version (as the guide's table pairs them), into an empty project. The
 * SDK's install script does not run: its agent proves with the wasm engine (test/sdk/package.test.ts builds the
 * native prover).
 */
async function installSellerProject(): Promise<PackedProject> {
  const x402 = await repositoryVersion("@x402/core");
  const registry = [
    ...["core", "evm", "express", "hono", "fetch"].map((name) => `@x402/${name}@${x402}`),
    `express@${await repositoryVersion("express")}`,
    "hono@4",
    "@hono/node-server@1",
  ];
  const installed = await installPackedProject(["seller", "sdk"], registry, { installScripts: false, ...(await guideProjectSetup()) });
  await writeFile(path.join(installed.project, "pay-every-instance.mjs"), AGENT_PROGRAM);
  return installed;
}

describe(`the seller package, packed and installed outside the repository, and the sellers' guide (${GUIDE}): its minimal seller as written, paid by a plain x402 client and by private agents`, function () {
  let world: PaymentWorld;
  let installed: PackedProject;

  before(async function () {
    const [started, packed] = await Promise.allSettled([startPaymentWorld(), installSellerProject()]);
    if (started.status === "fulfilled") world = started.value;
    if (packed.status === "fulfilled") installed = packed.value;
    for (const outcome of [started, packed]) if (outcome.status === "rejected") throw outcome.reason;
  });
  after(async function () {
    await world?.close();
    await installed?.cleanup();
  });

  /** Runs `code` from the project with the guide's environment, the relayer's seller routes as its facilitator. */
  async function startSeller(code: string, payTo: string, shared: Record<string, string> = {}): Promise<LocalServer> {
    return runGuideSeller(code, installed.project, {
      FACILITATOR_URL: `${world.relayer.url}/api/seller`,
      NETWORK: `eip155:${world.chainId}`,
      USDC: world.asset,
      PAY_TO: payTo,
      REFERENCE_SECRET: randomBytes(32).toString("hex"),
      ...shared,
    });
  }

  it("makes the project as the guide's Install block says: an ES module package that keeps the exact versions installed", async function () {
    const manifest = JSON.parse(await readFile(path.join(installed.project, "package.json"), "utf8")) as { type?: string; dependencies: Record<string, string> };
    expect(manifest.type).to.equal("module");
    const ranged = Object.entries(manifest.dependencies).filter(([, version]) => !version.startsWith("file:") && !/^\d+\.\d+\.\d+$/.test(version));
    expect(ranged, "dependencies saved as ranges").to.deep.equal([]);
    expect(manifest.dependencies).to.include({ "@x402/core": await repositoryVersion("@x402/core") });
  });

  /** A plain buyer pays the seller at `url`, then a private agent: payTo is up by exactly the price each time. */
  async function expectPaidBothWays(url: string, payTo: string) {
    const buyer = await plainBuyer(world, GUIDE_PRICE);
    const plain = await buyer.fetch(url);
    expect(plain.status).to.equal(200);
    expect(await plain.json()).to.deep.equal({ weather: "sunny" });
    expect(decodePaymentResponseHeader(plain.headers.get("PAYMENT-RESPONSE")!).payer?.toLowerCase()).to.equal(buyer.address.toLowerCase());
    expect(await world.usdcBalance(payTo)).to.equal(GUIDE_PRICE);
    expect(await world.usdcBalance(buyer.address)).to.equal(0n);

    const { agent, address } = await world.newAgent(world.chain.depositors.alice, 1_000_000n);
    const shielded = await agent.fetch(url);
    expect(shielded.status).to.equal(200);
    const settlement = decodePaymentResponseHeader(shielded.headers.get("PAYMENT-RESPONSE")!);
    expect(settlement.payer).to.equal(await world.chain.facilitator.privacyPool.getAddress());
    await expectAbsentFrom(world.provider, settlement.transaction, address);
    expect(await world.usdcBalance(payTo)).to.equal(2n * GUIDE_PRICE);
  }

  for (const [index, stack] of ["@x402/express", "@x402/hono"].entries()) {
    it(`under ${stack}: a plain EIP-3009 buyer and a private agent both paid through the relayer's seller routes, the price each time`, async function () {
      const code = (await guideSellers())[index]!;
      expect(code).to.contain(`from "${stack}"`);
      const payTo = Wallet.createRandom().address;
      const seller = await startSeller(code, payTo);
      try {
        await expectPaidBothWays(`${seller.url}/weather`, payTo);
      } finally {
        await seller.close();
      }
    });
  }

  describe("two instances of the @x402/express seller sharing one PostgreSQL record", function () {
    let schema: TestSchema;
    const instances: LocalServer[] = [];
    const payTo = Wallet.createRandom().address;

    before(async function () {
      schema = await createTestSchema();
      const [express] = await guideSellers();
      // The same secret and database for both: what makes them one seller.
      const shared = {
        REFERENCE_SECRET: randomBytes(32).toString("hex"),
        DATABASE_URL: `${schema.connectionString}?options=${encodeURIComponent(`-c search_path=${schema.schema}`)}`,
      };
      for (let instance = 0; instance < 2; instance++) instances.push(await startSeller(express!, payTo, shared));
    });
    after(async function () {
      for (const instance of instances) await instance.close();
      await schema?.drop();
    });

    it("are paid once by the packed SDK through @x402/fetch, presenting one payment to both at once: one 200, the seller up by exactly the price in one transaction, the agent in none; the payment presented again is refused by both", async function () {
      const { vault, vaultFile, deposit, address } = await world.newAgent(world.chain.depositors.bob, 1_000_000n);
      await vault.close();
      const urls = instances.map((instance) => `${instance.url}/weather`);
      const fromBlock = await world.provider.getBlockNumber();
      const poolBefore = await world.poolBalance();
      const { stdout } = await run(process.execPath, ["pay-every-instance.mjs"], {
        cwd: installed.project,
        env: {
          ...developerEnv(),
          FACILITATOR_URL: world.relayer.url,
          SELLER_URLS: urls.join(" "),
          VAULT_FILE: vaultFile,
          VAULT_PASSPHRASE: AGENT_PASSPHRASE,
          CHAIN_ID: String(world.chainId),
          USDC: world.asset,
        },
        timeout: 300_000,
      });
      const outcome = JSON.parse(stdout.trim().split("\n").at(-1)!) as { status: number; body: unknown; answers: number[]; payment: string; settlement: string };
      expect(outcome.status).to.equal(200);
      expect(outcome.body).to.deep.equal({ weather: "sunny" });
      // Both instances were presented the payment; one served it, the other was told it is taken.
      expect([...outcome.answers].sort()).to.deep.equal([200, 402]);

      expect(await world.usdcBalance(payTo)).to.equal(GUIDE_PRICE);
      const usdc = world.chain.facilitator.usdc;
      const credits = await usdc.queryFilter(usdc.filters.Transfer(undefined, payTo), fromBlock + 1);
      expect(credits.map((credit) => credit.transactionHash)).to.deep.equal([decodePaymentResponseHeader(outcome.settlement).transaction]);
      await expectAbsentFrom(world.provider, credits[0]!.transactionHash, address);
      // The notes gave the price and the relay's fee, once; the agent's change holds exactly the rest.
      const spent = poolBefore - (await world.poolBalance());
      expect(spent > GUIDE_PRICE, `the pool's notes gave ${spent}`).to.equal(true);
      const after = await NoteVault.open(vaultFile, AGENT_PASSPHRASE);
      try {
        expect((await world.unspentNotes(after)).map((note) => note.value)).to.deep.equal([deposit.note.value - spent]);
      } finally {
        await after.close();
      }

      for (const url of urls) {
        const again = await fetch(url, { headers: { "PAYMENT-SIGNATURE": outcome.payment } });
        expect(again.status, url).to.equal(402);
        expect(JSON.parse(Buffer.from(again.headers.get("PAYMENT-REQUIRED")!, "base64").toString()).error, url).to.equal(SHIELDED_REASONS.alreadyUsed);
      }
      expect(await world.usdcBalance(payTo)).to.equal(GUIDE_PRICE);
    });
  });
});

import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { expect } from "chai";
import { Wallet } from "ethers";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { depositSecretsOf, masterKeysOf, recoverNotes } from "../../sdk/agent/index.js";
import { changeNoteOf, createNote } from "../../sdk/index.js";
import { freePort } from "../../scripts/demo/processes.js";
import { startSeller, WEATHER_REPORT, type Seller } from "../../x402-peers/seller.js";
import { caip2NetworkOf } from "../../sdk/x402/networks.js";
import { startPaymentWorld, type PaymentWorld } from "../x402/helpers/payment-world.js";
import { startRedirector } from "../x402/helpers/redirector.js";

const TAKE_BPS = 500n;
const DEPOSIT = 1_000_000n;

/** An MCP host's view of the server: the SDK's own client over stdio, the server spawned as a host spawns it. */
interface Host {
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  /** Calls a tool that must succeed and returns its JSON answer. */
  json(name: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
  client: Client;
  /** Every tool answer's text and everything the server logged, to search for secrets. */
  transcript: string[];
  close(): Promise<void>;
}

describe("MCP server: a host pays x402 sellers privately through its tools (npm run mcp)", function () {
  let world: PaymentWorld;
  let expensive: Seller;
  const seed = Wallet.createRandom().privateKey;
  const depositor = Wallet.createRandom();
  const gross = () => grossForNet(world.price, TAKE_BPS);
  const hosts: Host[] = [];

  before(async function () {
    world = await startPaymentWorld();
    await world.chain.connection.networkHelpers.setBalance(depositor.address, 10n ** 18n);
    await (await world.chain.facilitator.usdc.mint(depositor.address, DEPOSIT)).wait();
    expensive = await startSeller({
      facilitatorUrl: world.x402Facilitator.url,
      asset: world.asset,
      amountAtomic: (world.price + 1n).toString(),
      x402Version: 2,
      network: caip2NetworkOf(world.chainId),
      payTo: Wallet.createRandom().address,
    });
  });
  after(async function () {
    for (const host of hosts) await host.close();
    await expensive?.close();
    await world?.close();
  });

  function serverEnv(overrides: Record<string, string> = {}): Record<string, string> {
    return {
      ...getDefaultEnvironment(),
      X402_FACILITATOR_URL: world.relayer.url,
      X402_RPC_URL: world.chain.rpc.url,
      X402_ADDRESS_BOOK: world.chain.addressBookFile,
      X402_SEED: seed,
      X402_VAULT_FILE: path.join(mkdtempSync(path.join(tmpdir(), "mcp-vault-")), "notes.vault"),
      X402_VAULT_PASSPHRASE: "host passphrase",
      X402_MAX_PAYMENT_ATOMIC: world.price.toString(),
      // One payment fits, a second does not.
      X402_BUDGET_ATOMIC: (gross() + gross() / 2n).toString(),
      X402_ACCEPT_NOT_PRIVATE: "true",
      X402_DEPOSITOR_PRIVATE_KEY: depositor.privateKey,
      ...overrides,
    };
  }

  async function startHost(env: Record<string, string>): Promise<Host> {
    const transport = new StdioClientTransport({ command: "npm", args: ["run", "--silent", "mcp"], env, stderr: "pipe" });
    const transcript: string[] = [];
    transport.stderr?.on("data", (chunk: Buffer) => transcript.push(chunk.toString("utf8")));
    const client = new Client({ name: "test-host", version: "1.0.0" });
    await client.connect(transport);
    const call = async (name: string, args: Record<string, unknown> = {}) => {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      for (const part of result.content) if (part.type === "text") transcript.push(part.text);
      return result;
    };
    const json = async (name: string, args: Record<string, unknown> = {}) => {
      const result = await call(name, args);
      expect(result.isError ?? false, textOf(result)).to.equal(false);
      return JSON.parse(textOf(result)) as Record<string, unknown>;
    };
    const host = { call, json, client, transcript, close: () => client.close() };
    hosts.push(host);
    return host;
  }

  const textOf = (result: CallToolResult) => result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  const balanceOf = async (host: Host) => (await host.json("x402_balance")).balanceAtomic;

  it("refuses to start without its config, naming every missing variable", function () {
    const started = spawnSync("npm", ["run", "--silent", "mcp"], { env: getDefaultEnvironment(), encoding: "utf8", input: "" });
    expect(started.status).to.equal(1);
    expect(started.stdout).to.equal("");
    for (const variable of ["X402_FACILITATOR_URL", "X402_SEED", "X402_VAULT_FILE", "X402_MAX_PAYMENT_ATOMIC", "X402_BUDGET_ATOMIC"]) {
      expect(started.stderr).to.contain(`Missing server config: ${variable}`);
    }
  });

  it("deposits, pays a paid URL and returns its body, refuses above the cap and past the budget with nothing spent; a second host recovers the notes from the seed alone; a crash mid-payment loses nothing", async function () {
    const env = serverEnv();
    const host = await startHost(env);
    const { tools } = await host.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).to.deep.equal(["x402_balance", "x402_deposit", "x402_fetch", "x402_privacy_status", "x402_recover"]);

    const status = await host.json("x402_privacy_status");
    expect(status).to.deep.include({ private: false, minimumForPrivacy: 30, payingWhenNotPrivate: true });
    expect(status.anonymitySet).to.be.a("number");

    expect(await balanceOf(host)).to.equal("0");
    const deposited = await host.json("x402_deposit", { amountAtomic: DEPOSIT.toString() });
    expect(deposited).to.deep.include({ deposited: true, valueAtomic: DEPOSIT.toString(), depositIndex: 0 });
    await world.syncIndexer();
    expect(await balanceOf(host)).to.equal(DEPOSIT.toString());
    // The vault as a crash between a settlement and the vault's write would leave it: the spent note still unspent.
    const staleVault = `${env.X402_VAULT_FILE}.before-payment`;
    copyFileSync(env.X402_VAULT_FILE!, staleVault);

    const before = await world.usdcBalance(world.payTo.v2);
    const paid = await host.json("x402_fetch", { url: world.sellers.v2.resourceUrl });
    expect(paid).to.deep.include({ status: 200 });
    expect(JSON.parse(paid.body as string)).to.deep.equal(WEATHER_REPORT);
    expect(paid.payment).to.deep.include({ amountAtomic: world.price.toString(), grossAtomic: gross().toString(), x402Version: 2 });
    expect(await world.usdcBalance(world.payTo.v2)).to.equal(before + world.price);
    const afterPayment = (DEPOSIT - gross()).toString();
    expect(await balanceOf(host)).to.equal(afterPayment);
    await world.syncIndexer();

    const pool = await world.poolBalance();
    const aboveCap = await host.call("x402_fetch", { url: expensive.resourceUrl });
    expect(aboveCap.isError).to.equal(true);
    expect(textOf(aboveCap)).to.match(/^PRICE_ABOVE_MAXIMUM: .* asks 50001 atomic USDC, above this agent's maxPaymentAtomic of 50000; nothing was paid/);
    const pastBudget = await host.call("x402_fetch", { url: world.sellers.v1.resourceUrl });
    expect(pastBudget.isError).to.equal(true);
    expect(textOf(pastBudget)).to.match(/^BUDGET_EXHAUSTED: .*Nothing was paid/);
    expect(await world.poolBalance()).to.equal(pool);
    expect(await balanceOf(host)).to.equal(afterPayment);
    expect((await host.json("x402_balance")).budget).to.deep.include({ usedAtomic: gross().toString() });

    // A new host with an empty vault and the seed alone, paying only once the user confirmed the price.
    const recovering = await startHost(serverEnv({ X402_CONFIRM_PAYMENTS: "true" }));
    expect(await balanceOf(recovering)).to.equal("0");
    const recovered = await recovering.json("x402_recover");
    expect(recovered).to.deep.include({ recoveredNotes: 1, markedSpent: 0 });
    expect(recovered.chains).to.deep.equal([{ depositIndex: 0, origin: "deposit", status: "unspent", valueAtomic: afterPayment }]);
    expect(await balanceOf(recovering)).to.equal(afterPayment);

    // A URL the user trusts that answers 302 to another origin's seller: refused, price confirmed or not; nothing paid.
    const trusted = await startRedirector(world.sellers.v1.resourceUrl);
    try {
      for (const confirmation of [{}, { confirmPriceAtomic: world.price.toString() }]) {
        const redirected = await recovering.call("x402_fetch", { url: trusted.elsewhereUrl, ...confirmation });
        expect(redirected.isError).to.equal(true);
        expect(textOf(redirected)).to.match(/^CROSS_ORIGIN_REDIRECT: .*redirects to http:\/\/127\.0\.0\.1:[0-9]+ .*Nothing was paid/);
      }
    } finally {
      await trusted.close();
    }
    expect(await balanceOf(recovering)).to.equal(afterPayment);

    const unconfirmed = await recovering.call("x402_fetch", { url: world.sellers.v1.resourceUrl });
    expect(unconfirmed.isError).to.equal(true);
    expect(textOf(unconfirmed)).to.match(/^CONFIRMATION_REQUIRED: .* asks 50000 atomic USDC.*Nothing was paid.*confirmPriceAtomic "50000"/);
    expect(await balanceOf(recovering)).to.equal(afterPayment);
    const belowPrice = await recovering.call("x402_fetch", { url: world.sellers.v1.resourceUrl, confirmPriceAtomic: (world.price - 1n).toString() });
    expect(textOf(belowPrice)).to.match(/^PRICE_ABOVE_MAXIMUM: .*above this payment's cap of 49999/);
    const confirmed = await recovering.json("x402_fetch", { url: world.sellers.v1.resourceUrl, confirmPriceAtomic: world.price.toString() });
    expect(confirmed).to.deep.include({ status: 200 });
    expect(confirmed.payment).to.deep.include({ x402Version: 1 });
    expect(await balanceOf(recovering)).to.equal((DEPOSIT - 2n * gross()).toString());

    // After a crash mid-payment nothing is lost: recovery marks the spent note and finds the change note.
    const restarted = await startHost(serverEnv({ X402_VAULT_FILE: staleVault }));
    expect(await balanceOf(restarted)).to.equal(DEPOSIT.toString());
    expect(await restarted.json("x402_recover")).to.deep.include({ recoveredNotes: 1, markedSpent: 1 });
    expect(await restarted.json("x402_balance")).to.deep.include({ balanceAtomic: (DEPOSIT - 2n * gross()).toString(), unspentNotes: 1, spentNotes: 1 });

    // No answer and no log line holds a note's secret, the seed or the depositor's key.
    await world.syncIndexer();
    const { chains } = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed });
    const [chain] = chains;
    expect(chain?.history.map((step) => step.kind)).to.deep.equal(["deposited", "withdrawn", "withdrawn"]);
    const { scope } = world.chain.facilitator.addressBook;
    const deposit = createNote(DEPOSIT, chain!.latest.label, depositSecretsOf(masterKeysOf(seed), BigInt(scope), 0));
    const notes = [deposit, changeNoteOf(deposit, gross()), changeNoteOf(changeNoteOf(deposit, gross()), gross())];
    expect(chain!.latest).to.deep.equal(notes[2]);
    const noteSecrets = notes.flatMap((note) => [note.nullifier.toString(), note.secret.toString()]);
    const secrets = [seed.slice(2), depositor.privateKey.slice(2), ...noteSecrets];
    const transcript = [...host.transcript, ...recovering.transcript, ...restarted.transcript].join("\n");
    expect(transcript).to.contain("ready on stdio");
    for (const secret of secrets) expect(transcript.includes(secret), "a secret reached a tool answer or a log").to.equal(false);
  });

  it("names the URL and the network's cause of a fetch that gets no answer, and answers deposits it cannot make with their code; nothing is paid or sent", async function () {
    const host = await startHost(serverEnv());
    const pool = await world.poolBalance();
    const nonce = await world.provider.getTransactionCount(depositor.address);
    const unreachable = `http://127.0.0.1:${await freePort()}/paid`;
    const refused = await host.call("x402_fetch", { url: unreachable });
    expect(refused.isError).to.equal(true);
    expect(textOf(refused)).to.match(new RegExp(`^FETCH_FAILED: GET ${unreachable} got no answer \\(.*ECONNREFUSED.*\\)\\. Nothing was paid\\.`));

    const small = await host.call("x402_deposit", { amountAtomic: "999999" });
    expect(textOf(small)).to.match(/^DEPOSIT_BELOW_MINIMUM: deposit of 999999 atomic USDC is below the pool's minimum of 1000000 \(1 USDC\); nothing was sent/);
    const large = await host.call("x402_deposit", { amountAtomic: (5n * DEPOSIT).toString() });
    expect(textOf(large)).to.match(new RegExp(`^DEPOSIT_ABOVE_BALANCE: ${depositor.address} holds [0-9]+ atomic USDC, the deposit needs 5000000; nothing was sent`));
    expect(await world.poolBalance()).to.equal(pool);
    expect(await world.provider.getTransactionCount(depositor.address)).to.equal(nonce);
  });

  it("deposits a wallet of two notes and pays two calls at once, each out of a note of its own", async function () {
    const walletSeed = Wallet.createRandom().privateKey;
    await (await world.chain.facilitator.usdc.mint(depositor.address, 2n * DEPOSIT)).wait();
    const host = await startHost(serverEnv({ X402_SEED: walletSeed, X402_BUDGET_ATOMIC: (2n * gross()).toString() }));
    const deposited = await host.json("x402_deposit", { amountAtomic: (2n * DEPOSIT).toString(), notes: 2 });
    expect(deposited).to.deep.include({ deposited: true, valueAtomic: (2n * DEPOSIT).toString(), depositIndex: 0 });
    expect(deposited.notes).to.deep.equal([
      { depositIndex: 0, valueAtomic: DEPOSIT.toString() },
      { depositIndex: 1, valueAtomic: DEPOSIT.toString() },
    ]);
    await world.syncIndexer();

    const paid = await Promise.all([world.sellers.v2, world.sellers.v1].map((seller) => host.json("x402_fetch", { url: seller.resourceUrl })));
    expect(paid.map((answer) => answer.status)).to.deep.equal([200, 200]);
    expect(await host.json("x402_balance")).to.deep.include({
      balanceAtomic: (2n * (DEPOSIT - gross())).toString(),
      unspentNotes: 2,
      reservedNotes: 0,
      spentNotes: 2,
    });
    const { unspent, chains } = await recoverNotes({ provider: world.provider, addressBook: world.chain.facilitator.addressBook, seed: walletSeed });
    expect(unspent.map((note) => note.value)).to.deep.equal([DEPOSIT - gross(), DEPOSIT - gross()]);
    expect(chains.map(({ depositIndex, history }) => ({ depositIndex, steps: history.map((step) => step.kind) }))).to.deep.equal([
      { depositIndex: 0, steps: ["deposited", "withdrawn"] },
      { depositIndex: 1, steps: ["deposited", "withdrawn"] },
    ]);
  });

  it("pays a batch-settlement seller on a private tab: one proof for many fetches, the tab's opening in the first answer", async function () {
    const price = 1_000n;
    const tabSeller = await world.startTabSeller({ price });
    try {
      await (await world.chain.facilitator.usdc.mint(depositor.address, DEPOSIT)).wait();
      const host = await startHost(
        serverEnv({
          X402_SEED: Wallet.createRandom().privateKey,
          X402_CUSTODY: "non-custodial",
          X402_TABS_DIRECTORY: mkdtempSync(path.join(tmpdir(), "mcp-tabs-")),
          X402_TAB_DEPOSIT_ATOMIC: "100000",
          X402_BUDGET_ATOMIC: DEPOSIT.toString(),
        }),
      );
      await host.json("x402_deposit", { amountAtomic: DEPOSIT.toString() });
      await world.syncIndexer();
      const pool = world.chain.facilitator.privacyPool;
      const relays = async () => (await pool.queryFilter(pool.filters.Withdrawn())).length;
      const relaysBefore = await relays();

      const first = await host.json("x402_fetch", { url: tabSeller.resourceUrl });
      expect(first).to.deep.include({ status: 200 });
      expect(first.payment).to.deep.include({ method: "tab", depositAtomic: "100000", grossAtomic: grossForNet(100_000n, TAKE_BPS).toString() });
      for (let i = 0; i < 3; i++) {
        const next = await host.json("x402_fetch", { url: tabSeller.resourceUrl });
        expect(next.status).to.equal(200);
        expect(JSON.parse(next.body as string)).to.deep.equal(WEATHER_REPORT);
        expect(next.payment).to.equal(undefined);
      }
      expect(await relays()).to.equal(relaysBefore + 1);
      expect(tabSeller.served()).to.equal(4);
    } finally {
      await tabSeller.close();
    }
  });
});

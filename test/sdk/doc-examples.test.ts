import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { expect } from "chai";
import { Wallet } from "ethers";
import * as sdkAgent from "../../sdk/agent/index.js";
import { NoteVault, X402Agent } from "../../sdk/agent/index.js";
import { FacilitatorClient } from "../../sdk/client/facilitator-client.js";
import { deposit as depositInPool } from "../indexer/helpers/pool-actions.js";
import { startRecordingProxy } from "../x402/helpers/recording-proxy.js";
import { AGENT_PASSPHRASE, startPaymentWorld, type PaymentWorld } from "../x402/helpers/payment-world.js";

const DOC = "docs/sdk.md";
const REPO_ROOT = path.resolve(import.meta.dirname, "../..");
/** Where each example runs from: inside the repository (gitignored), so that its imports of packages resolve. */
const SCRATCH = path.join(REPO_ROOT, ".scratch");
/** The global an example's module reads what the text around it defines (a wallet, a vault) from. */
const CONTEXT_KEY = "__sdkDocExample";
/** The SDK's package entries, as the examples import them, and the sources they are in this repository. */
const SDK_ENTRIES: Record<string, string> = {
  "x402-privacy-sdk": "sdk/index.ts",
  "x402-privacy-sdk/agent": "sdk/agent/index.ts",
  "x402-privacy-sdk/client": "sdk/client/facilitator-client.ts",
};
/** The pool's depositors besides the examples' own, at 2 USDC each: enough that a payment is private by default. */
const OTHER_DEPOSITORS = 30;
const USDC = 1_000_000n;

interface Example {
  /** The heading the example is under. */
  heading: string;
  code: string;
}

/** The doc's TypeScript and JavaScript blocks, each with the heading above it. */
async function docExamples(): Promise<Example[]> {
  const examples: Example[] = [];
  let heading = "";
  let open: string[] | undefined;
  for (const line of (await readFile(DOC, "utf8")).split("\n")) {
    if (open !== undefined) {
      if (line === "```") {
        examples.push({ heading, code: open.join("\n") });
        open = undefined;
      } else open.push(line);
    } else if (/^#+ /.test(line)) heading = line.replace(/^#+ /, "");
    else if (line === "```ts" || line === "```js") open = [];
  }
  return examples;
}

/** The first example under `heading`. */
async function exampleUnder(heading: string): Promise<string> {
  const found = (await docExamples()).find((example) => example.heading === heading);
  if (found === undefined) throw new Error(`${DOC} has no example under "${heading}"`);
  return found.code;
}

/** The names a module's top level declares (const, let, and destructured const). */
function declaredNames(code: string): string[] {
  const plain = [...code.matchAll(/^(?:const|let) (\w+)/gm)].map((match) => match[1]!);
  const destructured = [...code.matchAll(/^const \{ ([^}]+) \} =/gm)].flatMap((match) => match[1]!.split(",").map((name) => name.trim().split(":").at(-1)!.trim()));
  return [...plain, ...destructured];
}

/** The names a module imports. */
function importedNames(code: string): string[] {
  return [...code.matchAll(/^import \{([^}]+)\} from/gm)].flatMap((match) => match[1]!.split(",").map((name) => name.trim().split(/\s+as\s+/).at(-1)!).filter(Boolean));
}

/**
 * Runs an example as written, as a module of its own: its imports of the SDK's package entries go to this
 * repository's sources, `replacements` put this test's URLs and files where the example names placeholders (those it
 * names), every name of `context` it uses without defining is what the text around it says it is (the SDK's exports
 * among them, as the page imports them once), and it exports what it declares.
 */
async function runExample(code: string, context: Record<string, unknown>, replacements: Record<string, string>): Promise<Record<string, unknown>> {
  let body = code;
  for (const [placeholder, value] of Object.entries(replacements)) body = body.split(placeholder).join(value);
  body = body.replace(/from "(x402-privacy-sdk(?:\/\w+)?)"/g, (_, entry: string) => `from ${JSON.stringify(pathToFileURL(path.join(REPO_ROOT, SDK_ENTRIES[entry]!)).href)}`);
  const everything = { ...sdkAgent, FacilitatorClient, ...context };
  const defined = new Set([...declaredNames(body), ...importedNames(body)]);
  const given = Object.keys(everything).filter((name) => !defined.has(name));
  const module = `const { ${given.join(", ")} } = globalThis.${CONTEXT_KEY};\n${body}\nexport { ${declaredNames(body).join(", ")} };\n`;
  await mkdir(SCRATCH, { recursive: true });
  const dir = await mkdtemp(path.join(SCRATCH, "doc-example-"));
  const file = path.join(dir, "example.ts");
  await writeFile(file, module);
  (globalThis as Record<string, unknown>)[CONTEXT_KEY] = everything;
  try {
    return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } finally {
    delete (globalThis as Record<string, unknown>)[CONTEXT_KEY];
    await rm(dir, { recursive: true, force: true });
  }
}

describe(`${DOC}'s examples, run as written against a local pool, relayer and sellers`, function () {
  let world: PaymentWorld;
  let files: string;
  const closing: { close(): Promise<unknown> }[] = [];

  before(async function () {
    world = await startPaymentWorld();
    // A pool of 30 other depositors: the examples that leave acceptNotPrivate at its default (false) pay privately.
    const { networkHelpers } = world.chain.connection;
    for (let i = 0; i < OTHER_DEPOSITORS; i++) {
      const depositor = Wallet.createRandom().connect(world.chain.connection.ethers.provider);
      await networkHelpers.setBalance(depositor.address, 10n ** 18n);
      await depositInPool(world.chain, depositor, 7000 + i, 2n * USDC);
    }
    await world.syncIndexer();
    files = await mkdtemp(path.join(tmpdir(), "sdk-doc-examples-"));
  });
  after(async function () {
    for (const each of closing) await each.close().catch(() => undefined);
    await world?.close();
    if (files !== undefined) await rm(files, { recursive: true, force: true });
  });

  /** A fresh account with ETH for gas and `usdc` of the pool's USDC, as the examples' `wallet`. */
  async function fundedWallet(usdc: bigint) {
    const wallet = Wallet.createRandom().connect(world.chain.connection.ethers.provider);
    await world.chain.connection.networkHelpers.setBalance(wallet.address, 10n ** 18n);
    await (await world.chain.facilitator.usdc.mint(wallet.address, usdc)).wait();
    return wallet;
  }

  /** A vault holding one approved note of `value`, as the examples' `vault` ("notes deposited with depositNote"). */
  async function vaultWithNote(value: bigint) {
    const { vault, vaultFile } = await world.newAgent(await fundedWallet(0n), value);
    return { vault, vaultFile };
  }

  const facilitatorUrl = () => world.relayer.url;
  const network = () => ({ chainId: world.chainId, asset: world.asset });
  const sellerPlaceholders = (sellerUrl: string) => ({
    '"https://facilitator.example"': JSON.stringify(facilitatorUrl()),
    '"https://seller.example/weather"': JSON.stringify(sellerUrl),
    "chainId: 84532": `chainId: ${world.chainId}`,
  });

  it("the opening example: a vault, a deposit of 2 USDC, an agent, a request paid out of the pool", async function () {
    const payTo = world.payTo.v2;
    const before = await world.usdcBalance(payTo);
    // The example logs each event's step: its console is this test's record of them.
    const logged: unknown[] = [];
    const context = {
      wallet: await fundedWallet(2n * USDC),
      addressBook: world.chain.facilitator.addressBook,
      seed: Wallet.createRandom().privateKey,
      passphrase: AGENT_PASSPHRASE,
      console: { log: (line: unknown) => void logged.push(line) },
    };
    const code = await exampleUnder("Agent SDK");
    // "once the ASP approved it, it can pay": the indexer follows the chain meanwhile, as a deployed one does.
    const exports = await world.whileIndexerFollows(() =>
      runExample(code, context, { '"notes.vault"': JSON.stringify(path.join(files, "opening.vault")), ...sellerPlaceholders(world.sellers.v2.resourceUrl) }),
    );
    closing.push(exports.vault as NoteVault);
    expect((exports.response as Response).status).to.equal(200);
    expect((await world.usdcBalance(payTo)) - before).to.equal(world.price);
    expect(logged).to.include.members(["payment-required", "proved", "paid"]);
  });

  it("Install: the private-pool scheme on @x402/fetch, from a vault of notes deposited before", async function () {
    const { vault, vaultFile } = await vaultWithNote(1n * USDC);
    await vault.close();
    const payTo = world.payTo.v2;
    const before = await world.usdcBalance(payTo);
    const exports = await runExample(
      await exampleUnder("Install"),
      { passphrase: AGENT_PASSPHRASE, usdcAddress: world.asset },
      { '"notes.vault"': JSON.stringify(vaultFile), ...sellerPlaceholders(world.sellers.v2.resourceUrl) },
    );
    closing.push(exports.vault as NoteVault);
    expect((exports.response as Response).status).to.equal(200);
    expect((await world.usdcBalance(payTo)) - before).to.equal(world.price);
  });

  it("Private tab: the first request opens the tab (a 1 USDC deposit, private by default), the next is a voucher", async function () {
    const seller = await world.startTabSeller({ price: 10_000n });
    closing.push(seller);
    const { vault } = await vaultWithNote(2n * USDC);
    closing.push(vault);
    const exports = await runExample(
      await exampleUnder("Private tab: many requests for one proof"),
      { facilitator: new FacilitatorClient(facilitatorUrl()), vault, network: network() },
      { '"agent-tabs/"': JSON.stringify(path.join(files, "agent-tabs")), ...sellerPlaceholders(seller.resourceUrl) },
    );
    expect(seller.served()).to.equal(1);
    const spends = async () => (await vault.list()).filter((entry) => entry.spent).length;
    expect(await spends()).to.equal(1);
    const again = await (exports.agent as X402Agent).fetch(seller.resourceUrl);
    expect(again.status).to.equal(200);
    expect(seller.served()).to.equal(2);
    expect(await spends(), "a voucher spends no note").to.equal(1);
  });

  it("Roots the agent checks: the agent built with ownRpc reads the pool's roots through that RPC, then pays", async function () {
    const { vault } = await vaultWithNote(1n * USDC);
    closing.push(vault);
    // The agent's own RPC, recorded: what the agent asks it is what "reads the roots there" means.
    const ownRpc = await startRecordingProxy(world.chain.rpc.url);
    closing.push(ownRpc);
    const exports = await runExample(
      await exampleUnder("Roots the agent checks"),
      { facilitator: new FacilitatorClient(facilitatorUrl()), vault, usdc: world.asset, addressBook: world.chain.facilitator.addressBook },
      { '"https://base-sepolia.example/your-key"': JSON.stringify(ownRpc.url), "chainId: 84532": `chainId: ${world.chainId}` },
    );
    const response = await (exports.agent as X402Agent).fetch(world.sellers.v2.resourceUrl);
    expect(response.status).to.equal(200);
    const pool = (await world.chain.facilitator.privacyPool.getAddress()).toLowerCase();
    const calls = ownRpc.requests.map((request) => request.body.toLowerCase()).filter((body) => body.includes('"eth_call"'));
    expect(calls.some((body) => body.includes(pool)), "an eth_call to the pool through the agent's own RPC").to.equal(true);
  });

  it("A wallet of several notes: eight notes, eight requests at once, all paid", async function () {
    const { vault } = await vaultWithNote(1n * USDC);
    closing.push(vault);
    const payTo = world.payTo.v2;
    const before = await world.usdcBalance(payTo);
    const agent = new X402Agent({ facilitator: new FacilitatorClient(facilitatorUrl()), notes: vault, network: network() });
    const context = {
      wallet: await fundedWallet(8n * USDC),
      addressBook: world.chain.facilitator.addressBook,
      seed: Wallet.createRandom().privateKey,
      vault,
      agent,
      urls: Array.from({ length: 8 }, () => world.sellers.v2.resourceUrl),
    };
    const exports = await world.whileIndexerFollows(async () => runExample(await exampleUnder("A wallet of several notes"), context, {}));
    expect((exports.answers as Response[]).map((answer) => answer.status)).to.deep.equal(Array(8).fill(200));
    expect((await world.usdcBalance(payTo)) - before).to.equal(8n * world.price);
  });

  it("Any x402 client: the private-pool scheme registered on an x402Client, paid through @x402/fetch", async function () {
    const { vault } = await vaultWithNote(1n * USDC);
    closing.push(vault);
    const payTo = world.payTo.v2;
    const before = await world.usdcBalance(payTo);
    const exports = await runExample(
      await exampleUnder("Any x402 client: the private-pool scheme"),
      { vault, addressBook: world.chain.facilitator.addressBook },
      sellerPlaceholders(world.sellers.v2.resourceUrl),
    );
    expect((exports.response as Response).status).to.equal(200);
    expect((await world.usdcBalance(payTo)) - before).to.equal(world.price);
  });

  it("the NoteStore and NoteReservation the doc shows are the SDK's: every member it names is declared, every required one named, and NoteVault has the methods it lists", async function () {
    const blocks = (await docExamples()).filter((example) => example.code.includes("interface NoteStore"));
    expect(blocks).to.have.length(1);
    const doc = blocks[0]!.code;
    const source = await readFile(path.join(REPO_ROOT, "sdk/agent/note-reservation.ts"), "utf8");
    for (const name of ["NoteStore", "NoteReservation"]) {
      const documented = membersOf(doc, name);
      const declared = membersOf(source, name);
      expect(documented.map(({ member }) => member), name).to.not.be.empty;
      expect(declared.map(({ member }) => member), name).to.include.members(documented.map(({ member }) => member));
      expect(documented.map(({ member }) => member), name).to.include.members(declared.filter(({ optional }) => !optional).map(({ member }) => member));
    }
    const listed = /^\/\/ NoteVault: ([^\n]+(?:\n\/\/ +[^\n]+)*)/m.exec(doc)?.[1];
    expect(listed, "the NoteVault line").to.be.a("string");
    const methods = listed!
      .replace(/\n\/\/ +/g, " ")
      .replace(/\([^)]*\)/g, "")
      .replace(/->\s*\{[^}]*\}/g, "")
      .split(",")
      .map((part) => part.trim().split(/\s/)[0]!);
    expect(methods).to.include.members(["reserve", "reconcile", "list", "save", "markSpent", "close"]);
    for (const method of methods) {
      expect(NoteVault.prototype, `NoteVault.${method}`).to.respondTo(method);
    }
  });
});

/** The members of `interface <name>` in TypeScript `code`: each name, and whether it is optional. */
function membersOf(code: string, name: string): { member: string; optional: boolean }[] {
  const body = new RegExp(`interface ${name} \\{\\n([\\s\\S]*?)^\\}`, "m").exec(code)?.[1];
  if (body === undefined) throw new Error(`no interface ${name}`);
  return [...body.matchAll(/^ {2}(?:readonly )?(\w+)(\?)?[(:]/gm)].map((match) => ({ member: match[1]!, optional: match[2] === "?" }));
}

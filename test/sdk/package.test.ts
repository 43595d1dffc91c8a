import { execFile } from "node:child_process";
import { existsSync, lstatSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { grossForNet } from "../../relayer/pricing/pricing.js";
import { NoteVault } from "../../sdk/agent/index.js";
import { sha256File } from "../../sdk/circuit/artifacts.js";
import { WEATHER_REPORT } from "../../x402-peers/seller.js";
import { developerEnv, installPackedProject, repositoryVersion, type PackedProject } from "../helpers/packed-project.js";
import { AGENT_PASSPHRASE, startPaymentWorld, type PaymentWorld } from "../x402/helpers/payment-world.js";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
const SDK = path.join(ROOT, "sdk");

/**
 * An agent developer's program (pay.mjs in the project; not a file under test/, which mocha would load): it pays a
 * seller with the SDK's private-pool scheme out of a note vault another program filled, and prints one JSON line.
 */
const CONSUMER_PROGRAM = `import { x402Client } from "@x402/core/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { NoteVault, privatePoolScheme, registerPrivatePoolScheme } from "x402-privacy-sdk/agent";
import { FacilitatorClient } from "x402-privacy-sdk/client";

const { FACILITATOR_URL, SELLER_URL, VAULT_FILE, VAULT_PASSPHRASE, CHAIN_ID, USDC } = process.env;
const vault = await NoteVault.open(VAULT_FILE, VAULT_PASSPHRASE);
const engines = [];
const scheme = privatePoolScheme({
  facilitator: new FacilitatorClient(FACILITATOR_URL),
  notes: vault,
  network: { chainId: Number(CHAIN_ID), asset: USDC },
  acceptNotPrivate: true,
  onEvent: (event) => {
    if (event.step === "proved") engines.push(event.engine);
  },
});
const fetchWithPayment = wrapFetchWithPayment(fetch, registerPrivatePoolScheme(new x402Client(), scheme));
try {
  const response = await fetchWithPayment(SELLER_URL);
  console.log(JSON.stringify({ node: process.version, status: response.status, body: await response.json(), engines }));
} finally {
  await vault.close();
}
`;

/** Node 22: the `node` package the repository installs. */
const NODE_22 = path.join(ROOT, "node_modules", "node", "bin", "node");
const TAKE_BPS = 500n;

/** The machine's own `node`: the first on PATH outside a node_modules/.bin (where npm puts the repository's Node 22). */
function machineNode(): string | undefined {
  return (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((dir) => !dir.endsWith(path.join("node_modules", ".bin")))
    .map((dir) => path.join(dir, "node"))
    .find((file) => existsSync(file));
}

/**
 * The SDK packed and installed, with @x402/core, @x402/evm and @x402/fetch from the npm registry, into an empty project outside
 * the repository, with the consumer program beside; `sdk` is its folder in the project's node_modules.
 */
async function installPackedSdk(): Promise<PackedProject & { sdk: string }> {
  const peers = await Promise.all(["@x402/core", "@x402/evm", "@x402/fetch"].map(async (name) => `${name}@${await repositoryVersion(name)}`));
  const installed = await installPackedProject(["sdk"], peers);
  await writeFile(path.join(installed.project, "pay.mjs"), CONSUMER_PROGRAM);
  return { ...installed, sdk: path.join(installed.project, "node_modules", "x402-privacy-sdk") };
}

describe("the agent SDK as a package (sdk/package.json): packed, installed outside the repository, paying through @x402/fetch", function () {
  let world: PaymentWorld;
  let installed: PackedProject & { sdk: string };
  /** Where the package's postinstall leaves the native prover (sdk/native-prover/build.mjs). */
  const nativeProver = () => path.join(installed.sdk, "build", "native-prover", "groth16-prover");
  const nativeBuilt = () => existsSync(nativeProver());

  before(async function () {
    const [started, packed] = await Promise.allSettled([startPaymentWorld(), installPackedSdk()]);
    if (started.status === "fulfilled") world = started.value;
    if (packed.status === "fulfilled") installed = packed.value;
    for (const outcome of [started, packed]) if (outcome.status === "rejected") throw outcome.reason;
  });
  after(async function () {
    await world?.close();
    await installed?.cleanup();
  });

  it("installs into an empty project outside the repository: compiled with its types, the keys the manifest pins, the native prover built from its sources where a compiler is", async function () {
    expect(path.relative(ROOT, installed.project).startsWith(".."), "the project is outside the repository").to.equal(true);
    expect(lstatSync(installed.sdk).isSymbolicLink(), "a copy, not a link to the repository").to.equal(false);
    for (const entry of ["index", "agent/index", "client/facilitator-client", "prover/index", "x402/index"]) {
      for (const extension of [".js", ".d.ts"]) expect(existsSync(path.join(installed.sdk, "dist", `${entry}${extension}`)), `${entry}${extension}`).to.equal(true);
    }
    const manifest = JSON.parse(await readFile(path.join(SDK, "artifacts", "manifest.json"), "utf8")) as { files: Record<string, string> };
    for (const file of ["withdraw.wasm", "withdraw.zkey", "withdraw.vkey.json"]) {
      expect(await sha256File(path.join(installed.sdk, "artifacts", file)), file).to.equal(manifest.files[`sdk/artifacts/${file}`]);
    }
    const compiler = await run(process.env.GROTH16_PROVER_CXX || process.env.CXX || "g++", ["--version"]).then(() => true, () => false);
    expect(nativeBuilt()).to.equal(compiler);
    expect(installed.installLog).to.contain(compiler ? "native prover: built build/native-prover/groth16-prover" : "native prover: not built");
  });

  /**
   * A deposit made through the repository's SDK, its vault handed to the project (as another program of the agent's
   * owner would), then the project's program run with `node`: it pays the v2 seller. Checks the answer, the seller's
   * balance and the change note the program left in the vault; returns which engines proved.
   */
  async function payFromProject(node: string, depositor: keyof PaymentWorld["chain"]["depositors"]): Promise<{ node: string; engines: string[] }> {
    const { vault, vaultFile, deposit } = await world.newAgent(world.chain.depositors[depositor], 1_000_000n);
    await vault.close();
    const before = await world.usdcBalance(world.payTo.v2);
    const { stdout } = await run(node, ["pay.mjs"], {
      cwd: installed.project,
      env: {
        ...developerEnv(),
        FACILITATOR_URL: world.relayer.url,
        SELLER_URL: world.sellers.v2.resourceUrl,
        VAULT_FILE: vaultFile,
        VAULT_PASSPHRASE: AGENT_PASSPHRASE,
        CHAIN_ID: String(world.chainId),
        USDC: world.asset,
      },
      timeout: 300_000,
    });
    const outcome = JSON.parse(stdout.trim().split("\n").at(-1)!) as { node: string; status: number; body: unknown; engines: string[] };
    expect(outcome.status).to.equal(200);
    expect(outcome.body).to.deep.equal(WEATHER_REPORT);
    expect(await world.usdcBalance(world.payTo.v2)).to.equal(before + world.price);
    const after = await NoteVault.open(vaultFile, AGENT_PASSPHRASE);
    try {
      expect((await world.unspentNotes(after)).map((note) => note.value)).to.deep.equal([deposit.note.value - grossForNet(world.price, TAKE_BPS)]);
    } finally {
      await after.close();
    }
    return outcome;
  }

  for (const { label, major, node, depositor } of [
    { label: "Node 20 (the machine's node)", major: 20, node: machineNode, depositor: "alice" as const },
    { label: "Node 22 (the repository's node package)", major: 22, node: () => NODE_22, depositor: "bob" as const },
  ]) {
    it(`pays the local stack's seller from that project through @x402/fetch with the private-pool scheme, on ${label}: 200, the seller up by exactly the price`, async function () {
      const binary = node();
      const version = binary === undefined ? undefined : (await run(binary, ["--version"])).stdout.trim();
      if (version === undefined || !version.startsWith(`v${major}.`)) {
        console.log(`      no Node ${major} on this machine (found ${version ?? "none"}): the package is not tried on it`);
        this.skip();
      }
      const outcome = await payFromProject(binary!, depositor);
      expect(outcome.node).to.equal(version);
      // It proved its spend itself, with the package's keys and its own native prover where the install built it.
      expect(outcome.engines).to.deep.equal([nativeBuilt() ? "native" : "wasm"]);
    });
  }

  it("proves with the wasm engine (the package's compiled workers) where the install built no native prover", async function () {
    await rm(nativeProver(), { force: true });
    expect((await payFromProject(NODE_22, "carol")).engines).to.deep.equal(["wasm"]);
  });
});

// The main job, end to end: a fresh hardhat node (or an existing chain, DEMO_RPC_URL), the contracts, the indexer
// with its ASP curator, the relayer and a reference x402 seller, each its own process; then an agent deposits once
// and pays the seller privately, v2 and v1, printing every step with amounts and transaction hashes.
//
//   npm run demo                 (README "Running the demo elsewhere" for a fork or Base Sepolia)
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { JsonRpcProvider, Wallet, parseEther, type Signer } from "ethers";
import hre from "hardhat";
import { ConfigError } from "../../lib/env-config.js";
import { depositNote, NoteVault, X402Agent, type AgentEvent } from "../../sdk/agent/index.js";
import { FacilitatorClient, type SettleX402Answer } from "../../sdk/client/facilitator-client.js";
import { formatUsdc } from "../../relayer/pricing.js";
import { Entrypoint__factory, TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import { resolveAddressBook, writeAddressBook, type AddressBook } from "../deploy/address-book.js";
import { deployFacilitator } from "../deploy/deploy-facilitator.js";
import { DEMO_ENV, DEV_ROLES, devAccount, loadDemoConfig, type DemoConfig } from "./demo-config.js";
import { answers, freePort, startService, waitFor, type ServiceProcess } from "./processes.js";

const say = (tag: string, line: string) => console.log(`${`[${tag}]`.padEnd(10)} ${line}`);
const usdc = (atomic: bigint | string) => `${formatUsdc(BigInt(atomic))} USDC`;

/** The keys of each part: from the environment, else Hardhat's development accounts on a local chain. */
function keysFor(config: DemoConfig, chainId: number) {
  const local = chainId === 31337;
  const key = (value: string | undefined, role: keyof typeof DEV_ROLES, variable: string) => {
    if (value !== undefined) return value;
    if (local) return devAccount(DEV_ROLES[role]).privateKey;
    throw new ConfigError([`Missing server config: ${variable} (chain ${chainId} has no development accounts)`]);
  };
  return {
    deployer: devAccount(DEV_ROLES.deployer).privateKey,
    postman: key(config.postmanPrivateKey, "postman", DEMO_ENV.postmanPrivateKey),
    relayer: key(config.relayerPrivateKey, "relayer", DEMO_ENV.relayerPrivateKey),
    sellerFacilitator: key(config.sellerFacilitatorKey, "sellerFacilitator", DEMO_ENV.sellerFacilitatorKey),
    treasury: config.treasury ?? (local ? devAccount(DEV_ROLES.treasury).address : undefined),
    agent: config.agentPrivateKey,
  };
}

async function main(): Promise<void> {
  const config = loadDemoConfig(process.env);
  const logDir = mkdtempSync(path.join(tmpdir(), "x402-demo-"));
  const services: ServiceProcess[] = [];
  const run = (name: string, command: string, args: string[], env: Record<string, string>) => {
    const service = startService(name, command, args, env, logDir);
    services.push(service);
    return service;
  };
  say("logs", `each process writes to ${logDir}/<name>.log`);

  try {
    // 1. The chain.
    let rpcUrl = config.rpcUrl;
    if (rpcUrl === undefined) {
      rpcUrl = `http://127.0.0.1:${config.chainPort}`;
      if (await answers(rpcUrl)().catch(() => false)) {
        throw new Error(`port ${config.chainPort} is taken: stop what listens there, or set ${DEMO_ENV.chainPort}`);
      }
      run("chain", "hardhat", ["node", "--hostname", "127.0.0.1", "--port", String(config.chainPort)], {});
      const chainIdRequest = { method: "POST", headers: { "content-type": "application/json" }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' };
      await waitFor("the hardhat node", answers(rpcUrl, chainIdRequest));
    }
    // No request cache: the demo sends transactions back to back and must see each new nonce at once.
    const provider = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
    const chainId = Number((await provider.getNetwork()).chainId);
    say("chain", `${config.rpcUrl === undefined ? "hardhat node" : "existing chain"} ${rpcUrl}, eip155:${chainId}`);
    const keys = keysFor(config, chainId);

    // 2. The contracts: deployed afresh on a new node, read from the address book on an existing chain.
    const book = await deployedContracts(config, rpcUrl, chainId, keys.postman, logDir);
    const addressBookFile = await writeAddressBook(book, logDir);

    // 3. The services, each in its own process.
    const indexerToken = randomBytes(24).toString("hex");
    const [indexerPort, relayerPort, sellerPort] = [await freePort(), await freePort(), await freePort()];
    const indexerUrl = `http://127.0.0.1:${indexerPort}`;
    run("indexer", "tsx", ["indexer/main.ts"], {
      INDEXER_RPC_URL: rpcUrl,
      INDEXER_TOKEN: indexerToken,
      INDEXER_ADDRESS_BOOK: addressBookFile,
      INDEXER_DB_PATH: path.join(logDir, "indexer.sqlite"),
      INDEXER_PORT: String(indexerPort),
      INDEXER_POLL_INTERVAL_MS: "500",
      ASP_POSTMAN_PRIVATE_KEY: keys.postman,
    });
    const indexerStatus = async () =>
      (await (await fetch(`${indexerUrl}/v1/status`, { headers: { authorization: `Bearer ${indexerToken}` } })).json()) as { synced: boolean };
    await waitFor("the indexer's first sync", async () => (await indexerStatus()).synced);
    say("indexer", `${indexerUrl}: state tree synced, ASP curator screening deposits`);

    const relayerUrl = `http://127.0.0.1:${relayerPort}`;
    if (keys.treasury === undefined) throw new ConfigError([`Missing server config: ${DEMO_ENV.treasury}`]);
    run("relayer", "tsx", ["relayer/main.ts"], {
      RELAYER_RPC_URL: rpcUrl,
      RELAYER_PRIVATE_KEY: keys.relayer,
      RELAYER_ADDRESS_BOOK: addressBookFile,
      RELAYER_PORT: String(relayerPort),
      RELAYER_DB_PATH: path.join(logDir, "relayer.sqlite"),
      INDEXER_URL: indexerUrl,
      INDEXER_TOKEN: indexerToken,
      TREASURY_ADDRESS: keys.treasury,
      PAYER_KEY_SECRET: `0x${randomBytes(32).toString("hex")}`,
      PRICING_MODE: "paid",
      // The fee floor converts a relay's gas at this node's ~1 gwei, hundreds of times Base's: a 2 USDC/ETH price
      // keeps the floor (~1.4k atomic) under the demo's 5% take of its 0.05 USDC price.
      RELAYER_USDC_PER_ETH: "2",
    });
    await waitFor("the relayer", answers(`${relayerUrl}/api/facilitator/supported`));
    say("relayer", `${relayerUrl}: facilitator API (5% take to the treasury ${keys.treasury})`);

    const payTo = config.payTo ?? Wallet.createRandom().address;
    run("seller", "tsx", ["x402/main.ts"], {
      SELLER_DEMO_RPC_URL: rpcUrl,
      SELLER_DEMO_FACILITATOR_KEY: keys.sellerFacilitator,
      SELLER_DEMO_PAY_TO: payTo,
      SELLER_DEMO_PRICE: config.priceAtomic.toString(),
      SELLER_DEMO_ADDRESS_BOOK: addressBookFile,
      SELLER_DEMO_BASE_PORT: String(sellerPort),
    });
    const sellers = { v2: `http://127.0.0.1:${sellerPort + 1}/weather`, v1: `http://127.0.0.1:${sellerPort + 2}/weather` };
    await waitFor("the demo seller", answers(sellers.v2));
    say("seller", `${sellers.v2} (x402 v2) and ${sellers.v1} (v1): ${usdc(config.priceAtomic)} to ${payTo}, verified and settled by the reference x402 facilitator`);

    // 4. The agent: one deposit, then private payments.
    const agentWallet = await fundedAgent(config, keys, book, provider);
    const agentAddress = await agentWallet.getAddress();
    const seed = Wallet.createRandom().privateKey;
    const vault = await NoteVault.create(path.join(logDir, "agent-notes.vault"), randomBytes(16).toString("hex"));
    const deposited = await depositNote({ signer: agentWallet, addressBook: book, value: config.depositAtomic, seed });
    await vault.save(deposited.note);
    say("deposit", `agent ${agentAddress} deposited ${usdc(config.depositAtomic)} into the pool in ${deposited.txHash}`);

    await waitFor("the ASP approval", async () => {
      const response = await fetch(`${indexerUrl}/v1/asp/proofs/${deposited.note.label}`, { headers: { authorization: `Bearer ${indexerToken}` } });
      return response.ok;
    });
    const entrypoint = Entrypoint__factory.connect(book.entrypoint, provider);
    const rootUpdates = await entrypoint.queryFilter(entrypoint.filters.RootUpdated(), book.startBlock);
    const published = rootUpdates.at(-1);
    say("asp", `deposit screened and approved; ASP root 0x${published?.args.root.toString(16)} published in ${published?.transactionHash}`);

    let fundingTx: string | undefined;
    const agent = new X402Agent({
      facilitator: new FacilitatorClient(relayerUrl),
      notes: vault,
      network: { chainId, asset: book.usdc },
      acceptNotPrivate: true,
      onEvent: (event) => {
        if (event.step === "settled") fundingTx = (event.answer as SettleX402Answer).fundingTxHash;
        printAgentEvent(event);
      },
    });
    for (const [version, url] of Object.entries(sellers)) {
      say("agent", `GET ${url} (seller speaks x402 ${version})`);
      const response = await agent.fetch(url);
      const settlement = response.headers.get("PAYMENT-RESPONSE") ?? response.headers.get("X-PAYMENT-RESPONSE");
      const sellerTx = settlement === null ? undefined : decodePaymentResponseHeader(settlement).transaction;
      say(String(response.status), `${JSON.stringify(await response.json())}; the seller's facilitator settled it in ${sellerTx}`);
      if (response.status !== 200) throw new Error(`the seller answered ${response.status}`);
      await checkAgentAbsent(provider, agentAddress, [fundingTx!, sellerTx!]);
    }

    const token = TestUSDC__factory.connect(book.usdc, provider);
    const left = (await vault.list()).filter((entry) => !entry.spent).map((entry) => entry.note.value);
    say("done", `seller holds ${usdc(await token.balanceOf(payTo))}; the agent's note holds ${usdc(left[0] ?? 0n)}; its wallet paid nobody directly`);
    provider.destroy();
  } finally {
    await Promise.all(services.reverse().map((service) => service.stop()));
  }
}

function printAgentEvent(event: AgentEvent): void {
  switch (event.step) {
    case "payment-required":
      say("402", `${usdc(event.amount)} to ${event.payTo} on ${event.network} (x402 v${event.x402Version})`);
      break;
    case "probe":
      say("probe", `invalid-signature probe answered ${event.status} with a verification error: ${event.verdict}`);
      break;
    case "settled": {
      const answer = event.answer as SettleX402Answer;
      say(
        "settle",
        `pool paid ${usdc(answer.gross)} to the single-use payer ${answer.payer} (${usdc(answer.fee)} take to the treasury) ` +
          `in ${answer.fundingTxHash}; proof ${answer.proofTimeMs} ms; change note ${usdc(answer.remainingValue)}`,
      );
      say("privacy", answer.privacy.disclosure);
      break;
    }
    case "paid":
      say("retry", `GET ${event.url} with X-PAYMENT and PAYMENT-SIGNATURE -> ${event.status}`);
      break;
  }
}

/** A fresh node gets a fresh deployment (its own Ignition journal); an existing chain must have one. */
async function deployedContracts(config: DemoConfig, rpcUrl: string, chainId: number, postmanKey: string, logDir: string): Promise<AddressBook> {
  if (config.rpcUrl !== undefined) return resolveAddressBook(chainId, config.addressBook, DEMO_ENV.addressBook);
  const connection = await hre.network.create({ network: "localhost", override: { url: rpcUrl } });
  // The node dies with the demo, so its Ignition journal is of no use afterwards.
  const deploymentId = `demo-${path.basename(logDir)}`;
  try {
    const { addressBook } = await deployFacilitator(connection, {
      postman: new Wallet(postmanKey).address,
      deploymentId,
      log: (line) => say("deploy", line),
    });
    return addressBook;
  } finally {
    await connection.close();
    await rm(path.join(hre.config.paths.ignition, "deployments", deploymentId), { recursive: true, force: true });
  }
}

/**
 * The agent's wallet with the deposit and some gas: on a local chain a fresh wallet funded by the deployer (who
 * mints TestUSDC); elsewhere DEMO_AGENT_PRIVATE_KEY, which must hold the USDC.
 */
async function fundedAgent(config: DemoConfig, keys: ReturnType<typeof keysFor>, book: AddressBook, provider: JsonRpcProvider): Promise<Signer> {
  const agent = new Wallet(keys.agent ?? Wallet.createRandom().privateKey, provider);
  const token = TestUSDC__factory.connect(book.usdc, provider);
  if (keys.agent === undefined) {
    const deployer = new Wallet(keys.deployer, provider);
    await (await deployer.sendTransaction({ to: agent.address, value: parseEther("1") })).wait();
    await (await token.connect(deployer).mint(agent.address, config.depositAtomic)).wait();
    say("agent", `fresh wallet ${agent.address}: 1 ETH for gas and ${usdc(config.depositAtomic)} minted by the deployer`);
  }
  const balance = await token.balanceOf(agent.address);
  if (balance < config.depositAtomic) {
    throw new Error(`the agent ${agent.address} holds ${usdc(balance)}; the deposit needs ${usdc(config.depositAtomic)}`);
  }
  return agent;
}

/** The privacy claim, checked: the agent's address is in no field of the payment's transactions. */
async function checkAgentAbsent(provider: JsonRpcProvider, agent: string, txHashes: string[]): Promise<void> {
  const needle = agent.slice(2).toLowerCase();
  for (const hash of txHashes) {
    const [tx, receipt] = await Promise.all([provider.getTransaction(hash), provider.getTransactionReceipt(hash)]);
    const fields = [tx?.from, tx?.to, tx?.data, ...(receipt?.logs.flatMap((log) => [...log.topics, log.data]) ?? [])];
    if (fields.some((field) => field?.toLowerCase().includes(needle))) throw new Error(`${hash} mentions the agent`);
  }
  say("check", `the agent's address appears in neither ${txHashes.join(" nor ")}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exitCode = 1;
});

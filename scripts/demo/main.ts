// The main job, end to end: a fresh hardhat node (or an existing chain, DEMO_RPC_URL), the contracts, the indexer
// with its ASP curator, the relayer and a reference x402 seller, each its own process; then an agent deposits once
// and pays privately: a seller that takes payment by shielded proof (the pool pays it straight from the note), then
// the seller over v2 and v1 through the settle-x402 detour, printing every step with amounts and transaction hashes.
//
//   npm run demo                 (README "Running the demo elsewhere" for a fork or Base Sepolia)
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import { JsonRpcProvider, Wallet, parseEther, type Signer } from "ethers";
import { ConfigError } from "../../lib/env-config.js";
import { depositNote, NoteVault, X402Agent, type AgentEvent, type PaymentPrivacy, type RootsSource } from "../../sdk/agent/index.js";
import { FacilitatorClient, type OpenTabAnswer, type SettleX402Answer, type SettleX402ProofAnswer } from "../../sdk/client/facilitator-client.js";
import { formatUsdc } from "../../relayer/pricing/pricing.js";
import { Entrypoint__factory, TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import type { AddressBook } from "../../lib/address-book.js";
import { DEV_ROLES, devAccount, LOCAL_CHAIN_ID } from "../stack/dev-accounts.js";
import { startStack, type Stack } from "../stack/stack.js";
import { DEMO_ENV, loadDemoConfig, type DemoConfig } from "./demo-config.js";
import { answers, freePort, waitFor, waitForService } from "./processes.js";

const say = (tag: string, line: string) => console.log(`${`[${tag}]`.padEnd(10)} ${line}`);
const usdc = (atomic: bigint | string) => `${formatUsdc(BigInt(atomic))} USDC`;

async function main(): Promise<void> {
  const config = loadDemoConfig(process.env);
  const logDir = mkdtempSync(path.join(tmpdir(), "x402-demo-"));
  say("logs", `each process writes to ${logDir}/<name>.log`);
  // 1 to 3. The chain, the contracts, the indexer and the relayer: the stack of `npm run stack`.
  const stack = await startStack({
    rpcUrl: config.rpcUrl,
    chainPort: config.chainPort,
    addressBook: config.addressBook,
    postmanPrivateKey: config.postmanPrivateKey,
    relayerPrivateKey: config.relayerPrivateKey,
    treasury: config.treasury,
    variables: {
      addressBook: DEMO_ENV.addressBook,
      postmanPrivateKey: DEMO_ENV.postmanPrivateKey,
      relayerPrivateKey: DEMO_ENV.relayerPrivateKey,
      treasury: DEMO_ENV.treasury,
    },
    logDir,
    say,
  });
  try {
    // A service that exits during the payment ends the demo at once, with the end of its log.
    await Promise.race([pay(config, stack), stack.failure]);
  } finally {
    await stack.stop();
  }
}

/** The seller, then the agent: one deposit and private payments to a v2 and a v1 seller. */
async function pay(config: DemoConfig, stack: Stack): Promise<void> {
  const { book, chainId, rpcUrl, relayerUrl, indexerUrl, indexerToken } = stack;
  // No request cache: the demo sends transactions back to back and must see each new nonce at once.
  const provider = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  const local = chainId === LOCAL_CHAIN_ID;
  const sellerKey = config.sellerFacilitatorKey ?? (local ? devAccount(DEV_ROLES.sellerFacilitator).privateKey : undefined);
  if (sellerKey === undefined) {
    throw new ConfigError([`Missing server config: ${DEMO_ENV.sellerFacilitatorKey} (chain ${chainId} has no development accounts)`]);
  }
  const sellerPort = await freePort();
  const payTo = config.payTo ?? Wallet.createRandom().address;
  const seller = stack.run("seller", "tsx", ["x402-peers/main.ts"], {
    SELLER_DEMO_RPC_URL: rpcUrl,
    SELLER_DEMO_FACILITATOR_KEY: sellerKey,
    SELLER_DEMO_PAY_TO: payTo,
    SELLER_DEMO_PRICE: config.priceAtomic.toString(),
    SELLER_DEMO_ADDRESS_BOOK: stack.addressBookFile,
    SELLER_DEMO_BASE_PORT: String(sellerPort),
    SELLER_DEMO_SHIELDED_FACILITATOR_URL: `${relayerUrl}/api/seller`,
  });
  const sellers = {
    "v2, shielded proof": `http://127.0.0.1:${sellerPort + 4}/weather`,
    v2: `http://127.0.0.1:${sellerPort + 1}/weather`,
    v1: `http://127.0.0.1:${sellerPort + 2}/weather`,
  };
  await waitForService(seller, "the demo seller", answers(sellers["v2, shielded proof"]));
  say(
    "seller",
    `${sellers.v2} (x402 v2) and ${sellers.v1} (v1): ${usdc(config.priceAtomic)} to ${payTo}, verified and settled by the reference x402 facilitator; ` +
      `${sellers["v2, shielded proof"]} takes payment by shielded proof, relayed by the relayer's seller routes`,
  );

  // 4. The agent: one deposit, then private payments.
  const agentWallet = await fundedAgent(config, stack.deployerPrivateKey, book, provider);
  const agentAddress = await agentWallet.getAddress();
  const seed = Wallet.createRandom().privateKey;
  const vault = await NoteVault.create(path.join(stack.logDir, "agent-notes.vault"), randomBytes(16).toString("hex"));
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
  const seen = new Set<string>();
  // A tab's requests are told in two lines, not a line each: its first 402 is printed, no retry.
  let onTab = false;
  let tabQuoted = false;
  const shown = (event: AgentEvent) => {
    if (!onTab) return true;
    if (event.step === "paid" || (event.step === "payment-required" && tabQuoted)) return false;
    tabQuoted ||= event.step === "payment-required";
    return true;
  };
  const agent = new X402Agent({
    facilitator: new FacilitatorClient(relayerUrl),
    notes: vault,
    network: { chainId, asset: book.usdc },
    // The agent's own view of the pool: it proves only against roots at least as new as this RPC shows.
    ownRpc: { url: rpcUrl, privacyPool: book.privacyPool },
    acceptNotPrivate: true,
    tabs: { channelDirectory: path.join(stack.logDir, "agent-tabs") },
    onEvent: (event) => {
      seen.add(event.step);
      if (event.step === "settled") fundingTx = (event.answer as SettleX402Answer | SettleX402ProofAnswer).fundingTxHash;
      if (shown(event)) printAgentEvent(event);
    },
  });
  for (const [version, url] of Object.entries(sellers)) {
    say("agent", `GET ${url} (seller speaks x402 ${version})`);
    seen.clear();
    const response = await agent.fetch(url);
    const settlement = response.headers.get("PAYMENT-RESPONSE") ?? response.headers.get("X-PAYMENT-RESPONSE");
    const sellerTx = settlement === null ? undefined : decodePaymentResponseHeader(settlement).transaction;
    const direct = seen.has("proved-payment");
    const how = direct ? "its facilitator relayed the agent's proof and the pool paid the seller, one transaction," : "the seller's facilitator settled it";
    say(String(response.status), `${JSON.stringify(await response.json())}; ${how} in ${sellerTx}`);
    if (response.status !== 200) throw new Error(`the seller answered ${response.status}`);
    await checkAgentAbsent(provider, agentAddress, direct ? [sellerTx!] : [fundingTx!, sellerTx!]);
  }

  // 5. A private tab, where the chain has x402's batch-settlement contract: one proof, then a voucher per request.
  if ((await provider.getCode(BATCH_SETTLEMENT_ADDRESS)) !== "0x") {
    onTab = true;
    await payRequestsOnTab(agent, `http://127.0.0.1:${sellerPort + 5}/weather`, provider, [book.entrypoint, book.privacyPool, BATCH_SETTLEMENT_ADDRESS]);
  }

  const token = TestUSDC__factory.connect(book.usdc, provider);
  const left = (await vault.list()).filter((entry) => !entry.spent).map((entry) => entry.note.value);
  say("done", `seller holds ${usdc(await token.balanceOf(payTo))}; the agent's note holds ${usdc(left[0] ?? 0n)}; its wallet paid nobody directly`);
  provider.destroy();
}

/** How many requests the demo pays on its tab, the opening and then vouchers: all on the one tab it opens (it holds 38 at the tab seller's price). */
const TAB_REQUESTS = 20;

/**
 * Pays TAB_REQUESTS requests to the tab seller `url`, timing each and counting the transactions to the payment
 * contracts (`paymentContracts`: the pool's and x402's batch-settlement) each one caused.
 */
async function payRequestsOnTab(agent: X402Agent, url: string, provider: JsonRpcProvider, paymentContracts: string[]): Promise<void> {
  say("agent", `GET ${url} ${TAB_REQUESTS} times (seller speaks x402's batch-settlement: a private tab)`);
  const payments = new Set(paymentContracts.map((address) => address.toLowerCase()));
  const requests: { ms: number; transactions: number }[] = [];
  for (let i = 0; i < TAB_REQUESTS; i++) {
    const before = await provider.getBlockNumber();
    const started = performance.now();
    const response = await agent.fetch(url);
    const ms = Math.round(performance.now() - started);
    if (response.status !== 200) throw new Error(`the tab seller answered ${response.status}: ${await response.text()}`);
    await response.body?.cancel();
    requests.push({ ms, transactions: await transactionsTo(provider, payments, before) });
  }
  const [opening, ...vouchers] = requests as [(typeof requests)[number], ...typeof requests];
  const sorted = vouchers.map(({ ms }) => ms).sort((a, b) => a - b);
  say("tab", `request 1 opened the tab: one proof, ${opening.transactions} transaction (the relay that spent the note and deposited into the seller's channel), ${opening.ms} ms`);
  say(
    "tab",
    `requests 2-${TAB_REQUESTS}: a voucher of the tab's key each, ${vouchers.reduce((sum, { transactions }) => sum + transactions, 0)} transactions, ` +
      `p50 ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted.at(-1)} ms (${vouchers.map(({ ms }) => ms).join(", ")} ms)`,
  );
  say(
    "who",
    "the tab's deposit sits in x402's channel: the seller can claim up to the agent's last voucher, the agent's tab key alone signs vouchers, " +
      "and the channel pays back only the tab's payer, a keyless contract of the pool's, from which anyone can move the unclaimed rest only " +
      "into the pool as the agent's refund note: no key of the operator's can move it",
  );
}

/** Transactions to `contracts` mined since block `since`. */
async function transactionsTo(provider: JsonRpcProvider, contracts: ReadonlySet<string>, since: number): Promise<number> {
  let count = 0;
  const latest = await provider.getBlockNumber();
  for (let number = since + 1; number <= latest; number++) {
    const block = await provider.getBlock(number, true);
    count += block?.prefetchedTransactions.filter((tx) => tx.to !== null && contracts.has(tx.to.toLowerCase())).length ?? 0;
  }
  return count;
}

/** Where a proof's roots came from: checked against the agent's own RPC at a block, or the facilitator's word. */
function rootsLine(roots: RootsSource, stateTreeSize?: number): string {
  const tree = stateTreeSize === undefined ? "" : ` (a state tree of ${stateTreeSize} leaves)`;
  return roots.checkedAt === "own-rpc"
    ? `proved against roots${tree} no older than the pool's at block ${roots.block}, read by the agent's own RPC`
    : `proved against the facilitator's roots${tree}, unchecked: it could have singled the agent out`;
}

/** This payment's own anonymity set: the depositors whose deposits could have funded it. */
function anonymityLine({ private: isPrivate, anonymitySet }: Partial<PaymentPrivacy>): string {
  return isPrivate
    ? `private: ${anonymitySet} independent depositors hold deposits that could have funded this payment`
    : `NOT private: ${anonymitySet ?? "an unknown number of"} independent depositor(s) hold deposits that could have funded this payment, below the minimum of 30`;
}

function printAgentEvent(event: AgentEvent): void {
  switch (event.step) {
    case "payment-required":
      say("402", `${usdc(event.amount)} to ${event.payTo} on ${event.network} (x402 v${event.x402Version})`);
      break;
    case "probe":
      say("probe", `invalid-signature probe answered ${event.status} with a verification error: ${event.verdict}`);
      break;
    case "access-fee-paid":
      say("fee", `paid the facilitator's access fee of ${usdc(event.answer.amount)} out of the note in ${event.answer.txHash}; the pool is its payer, and the change note it authorized pays next`);
      break;
    case "proved":
      say("prove", `the agent proved the withdrawal itself in ${event.proofTimeMs} ms against the relayer's quote; no note secret, value or label left it`);
      // The settle's disclosure (next) gives this payment's anonymity set.
      say("roots", rootsLine(event.roots, event.quote.stateTreeSize));
      break;
    case "settled": {
      const answer = event.answer as SettleX402Answer | SettleX402ProofAnswer | OpenTabAnswer;
      const change =
        "changeCommitment" in answer
          ? "relayed the agent's proof; the change note is known to the agent alone"
          : `proof ${answer.proofTimeMs} ms; change note ${usdc(answer.remainingValue)}`;
      const paid =
        "xPayment" in answer
          ? `the pool ${answer.payer} authorized ${usdc(answer.amount)} to the seller (${usdc(answer.fee)} take to the treasury): no one but the seller can take it, from the pool, until ${new Date(answer.validBefore * 1000).toISOString()}, and then anyone only back into the agent's note`
          : `the pool deposited ${usdc(BigInt(answer.gross) - BigInt(answer.fee))} into the seller's channel ${answer.channelId}, whose payer is the tab's keyless ${answer.payer} (${usdc(answer.fee)} take to the treasury)`;
      say("settle", `the relay spent ${usdc(answer.gross)} of the note in ${answer.fundingTxHash}: ${paid}; ${change}`);
      say("privacy", answer.privacy.disclosure);
      break;
    }
    case "proved-payment":
      say(
        "prove",
        `the agent proved the payment itself in ${event.proofTimeMs} ms: ${usdc(event.amount)} to the seller and a relay fee of ${usdc(event.fee)}, bound until ${new Date(event.validBefore * 1000).toISOString()}; nothing moves until the seller settles`,
      );
      say("roots", rootsLine(event.roots));
      say("privacy", anonymityLine(event));
      break;
    case "paid":
      say("retry", `GET ${event.url} with X-PAYMENT and PAYMENT-SIGNATURE -> ${event.status}`);
      break;
  }
}

/**
 * The agent's wallet with the deposit and some gas: on a local chain a fresh wallet funded by the deployer (who
 * mints TestUSDC); elsewhere DEMO_AGENT_PRIVATE_KEY, which must hold the USDC.
 */
async function fundedAgent(config: DemoConfig, deployerKey: string | undefined, book: AddressBook, provider: JsonRpcProvider): Promise<Signer> {
  const agent = new Wallet(config.agentPrivateKey ?? Wallet.createRandom().privateKey, provider);
  const token = TestUSDC__factory.connect(book.usdc, provider);
  if (config.agentPrivateKey === undefined) {
    if (deployerKey === undefined) throw new ConfigError([`Missing server config: ${DEMO_ENV.agentPrivateKey} (the chain has no development accounts to fund a fresh agent)`]);
    const deployer = new Wallet(deployerKey, provider);
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
  console.error(error instanceof ConfigError ? error.message : error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

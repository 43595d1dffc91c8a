import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from "@x402/evm";
import { Wallet } from "ethers";
import hre from "hardhat";
import { ConfigError } from "../../lib/env-config.js";
import { resolveAddressBook, writeAddressBook, type AddressBook } from "../../lib/address-book.js";
import { deployFacilitator } from "../deploy/deploy-facilitator.js";
import {
  answers,
  answersJsonRpc,
  exitReport,
  freePort,
  startService,
  waitFor,
  waitForService,
  type ServiceProcess,
} from "../demo/processes.js";
import { placeBatchSettlementPeer } from "../../x402-peers/batch-settlement.js";
import { DEV_ROLES, devAccount, LOCAL_CHAIN_ID } from "./dev-accounts.js";

export interface StackOptions {
  /** An existing chain (a fork, Base Sepolia) instead of a fresh hardhat node; its contracts must be deployed. */
  rpcUrl?: string;
  /** Port of the fresh hardhat node; default: a free one. */
  chainPort?: number;
  /** Ports of the relayer's and the indexer's GET /metrics (each apart from its API); default (or 0): free ones. */
  metricsPorts?: { relayer?: number; indexer?: number };
  /** Port of a Prometheus started with the stack, scraping both and loading monitoring/rules.yml; absent: none. */
  prometheusPort?: number;
  /** The existing chain's address book; default deployments/<chainId>.json. */
  addressBook?: string;
  /** Default on a local chain: its development accounts (dev-accounts.ts). */
  postmanPrivateKey?: string;
  relayerPrivateKey?: string;
  /**
   * The key that settles the seller routes' plain `exact` (EIP-3009) payments from its own gas
   * (RELAYER_SELLER_EIP3009_KEY); default on a local chain: a development account. Without one the routes refuse them.
   */
  sellerEip3009PrivateKey?: string;
  treasury?: string;
  /** The environment variable behind each option above, for the messages that ask for one. */
  variables: {
    addressBook: string;
    postmanPrivateKey: string;
    relayerPrivateKey: string;
    treasury: string;
    /** Those of the fixed ports, where they are asked for. */
    relayerMetricsPort?: string;
    indexerMetricsPort?: string;
    prometheusPort?: string;
  };
  /** Where each process writes <name>.log and the stack its stack.json. */
  logDir: string;
  /** Receives the progress, one tagged line at a time. */
  say: (tag: string, line: string) => void;
}

/** What an agent (or a test) needs to use the running stack; also written to <logDir>/stack.json. */
export interface StackInfo {
  rpcUrl: string;
  chainId: number;
  addressBookFile: string;
  indexerUrl: string;
  indexerToken: string;
  relayerUrl: string;
  /** GET /metrics of each service, on a port of its own (Prometheus text). */
  relayerMetricsUrl: string;
  indexerMetricsUrl: string;
  /** A Prometheus configuration scraping both, with the alert rules: <logDir>/prometheus.yml. */
  prometheusConfigFile: string;
  /** The Prometheus started with the stack, when asked for. */
  prometheusUrl?: string;
  /** x402's batch-settlement contract a private tab's channel lives in: placed at its canonical address on a fresh node. */
  contracts: { entrypoint: string; privacyPool: string; usdc: string; batchSettlement: string };
  /** Who settles the plain (EIP-3009) payments of the relayer's seller routes (docs/accept-private-payments.md), if anyone. */
  sellerEip3009Settler?: string;
  /**
   * On a local chain, two funded development keys for a seller's facilitator of its own (docs/accept-private-payments.md):
   * `settler` sends plain payments and tab claims, `relay` relays private payments (each key its own nonces).
   */
  sellerFacilitatorKeys?: { settler: string; relay: string };
  logDir: string;
  /** The process id of each service, by name. */
  pids: Record<string, number>;
}

export interface Stack extends StackInfo {
  book: AddressBook;
  /** The deployer's key on a local chain (it mints TestUSDC), undefined elsewhere. */
  deployerPrivateKey: string | undefined;
  /** Rejects, with the service's exit and the end of its log, when a service exits while the stack runs. */
  failure: Promise<never>;
  /** Starts one more service in the stack (the demo's seller): stopped with it, failing it when it exits. */
  run: Run;
  /** Stops every service, last started first. */
  stop(): Promise<void>;
}

/**
 * The local system, each service its own process on a free port: a hardhat node (or an existing chain), the
 * contracts, the indexer with its ASP curator, and the relayer. A service that exits while starting fails the
 * start at once with the end of its log; everything started is stopped again.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const services: ServiceProcess[] = [];
  let fail: (error: Error) => void = () => {};
  const failure = new Promise<never>((_, reject) => (fail = reject));
  failure.catch(() => undefined);
  const run = (name: string, command: string, args: string[], env: Record<string, string>) => {
    const service = startService(name, command, args, env, options.logDir, (gone, how) => {
      void exitReport(gone, how).then((report) => fail(new Error(report)));
    });
    services.push(service);
    return service;
  };
  const stop = async () => {
    for (const service of [...services].reverse()) await service.stop();
  };
  try {
    const started = await startServices(options, run);
    const info: StackInfo = { ...started.info, pids: Object.fromEntries(services.map((service) => [service.name, service.pid])) };
    await writeFile(path.join(options.logDir, "stack.json"), `${JSON.stringify(info, null, 2)}\n`);
    return { ...info, book: started.book, deployerPrivateKey: started.deployerPrivateKey, failure, run, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Every port of the stack listens on loopback only. */
const LOOPBACK = "127.0.0.1";

/** The repository's alert rules (docs/operations.md, "Alert rules"), which a Prometheus of the stack loads. */
const ALERT_RULES = fileURLToPath(new URL("../../monitoring/rules.yml", import.meta.url));

/**
 * A Prometheus configuration for the stack: both services' metrics every 5 s (a local chain moves fast), the alert
 * rules of the repository. JSON, which Prometheus reads as the YAML it is.
 */
function prometheusConfig(ports: { relayer: number; indexer: number }): string {
  const job = (name: string, port: number) => ({ job_name: name, static_configs: [{ targets: [`${LOOPBACK}:${port}`] }] });
  const config = {
    global: { scrape_interval: "5s", evaluation_interval: "5s" },
    rule_files: [ALERT_RULES],
    scrape_configs: [job("relayer", ports.relayer), job("indexer", ports.indexer)],
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** Starts the Prometheus of the PATH on `port` with `configFile`, its data in the log folder; resolves with its URL once ready. */
async function startPrometheus(port: number, variable: string | undefined, configFile: string, logDir: string, run: Run): Promise<string> {
  const binary = onPath("prometheus");
  if (binary === undefined) throw new ConfigError(["A Prometheus was asked for, and no prometheus is on the PATH: install it (Debian, Ubuntu: apt-get install prometheus)"]);
  if (port === 0) port = await freePort();
  else await assertPortFree(port, variable);
  const url = `http://${LOOPBACK}:${port}`;
  const prometheus = run("prometheus", binary, [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(logDir, "prometheus-data")}`, `--web.listen-address=${LOOPBACK}:${port}`], {});
  await waitForService(prometheus, "Prometheus", async () => (await fetch(`${url}/-/ready`)).ok);
  return url;
}

/** The absolute path of `name` in a folder of the PATH, if any. */
function onPath(name: string): string | undefined {
  return (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((folder) => folder !== "")
    .map((folder) => path.join(folder, name))
    .find((file) => existsSync(file));
}

/** Refuses a port something listens on already, naming the variable that moves it. */
async function assertPortFree(port: number, variable: string | undefined): Promise<void> {
  const server = createServer();
  const taken = await new Promise<boolean>((resolve) => {
    server.once("error", () => resolve(true));
    server.listen(port, LOOPBACK, () => resolve(false));
  });
  if (!taken) await new Promise((resolve) => server.close(resolve));
  if (taken) throw new ConfigError([`port ${port} of ${LOOPBACK} is taken: stop what listens there${variable === undefined ? "" : `, or set ${variable} to another port (0: a free one)`}`]);
}

/** node:sqlite is stable enough for the services; its ExperimentalWarning on every start only worries operators. */
const QUIET_SQLITE = "--disable-warning=ExperimentalWarning";

type Run = (name: string, command: string, args: string[], env: Record<string, string>) => ServiceProcess;

async function startServices(options: StackOptions, run: Run) {
  const { say } = options;
  // The fixed ports first: one that is taken stops the start before anything runs.
  const metricsPort = async (port: number | undefined, variable: string | undefined) => {
    if (port === undefined || port === 0) return freePort();
    await assertPortFree(port, variable);
    return port;
  };
  const metricsPorts = {
    indexer: await metricsPort(options.metricsPorts?.indexer, options.variables.indexerMetricsPort),
    relayer: await metricsPort(options.metricsPorts?.relayer, options.variables.relayerMetricsPort),
  };

  // 1. The chain.
  let rpcUrl = options.rpcUrl;
  if (rpcUrl === undefined) {
    const port = options.chainPort ?? (await freePort());
    rpcUrl = `http://127.0.0.1:${port}`;
    if (await answers(rpcUrl)().catch(() => false)) throw new Error(`port ${port} is taken: stop what listens there, or choose another`);
    const node = run("chain", "hardhat", ["node", "--hostname", "127.0.0.1", "--port", String(port)], {});
    await waitForService(node, "the hardhat node", answersJsonRpc(rpcUrl));
  }
  const chainId = await chainIdOf(rpcUrl);
  say("chain", `${options.rpcUrl === undefined ? "hardhat node" : "existing chain"} ${rpcUrl}, eip155:${chainId}`);
  const keys = keysFor(options, chainId);

  // 2. The contracts: deployed afresh on a new node, read from the address book on an existing chain.
  const book =
    options.rpcUrl === undefined
      ? await deployFresh(rpcUrl, { postman: new Wallet(keys.postman).address }, options.logDir, say)
      : await resolveAddressBook(chainId, options.addressBook, options.variables.addressBook);
  const addressBookFile = await writeAddressBook(book, options.logDir);

  // 3. The indexer and its ASP curator.
  const indexerToken = randomBytes(24).toString("hex");
  const [indexerPort, relayerPort] = [await freePort(), await freePort()];
  const indexerUrl = `http://127.0.0.1:${indexerPort}`;
  const indexer = run("indexer", "tsx", [QUIET_SQLITE, "indexer/main.ts"], {
    INDEXER_RPC_URL: rpcUrl,
    INDEXER_TOKEN: indexerToken,
    INDEXER_ADDRESS_BOOK: addressBookFile,
    INDEXER_DB_PATH: path.join(options.logDir, "indexer.sqlite"),
    INDEXER_PORT: String(indexerPort),
    INDEXER_METRICS_PORT: String(metricsPorts.indexer),
    INDEXER_METRICS_HOST: LOOPBACK,
    INDEXER_POLL_INTERVAL_MS: "500",
    ASP_POSTMAN_PRIVATE_KEY: keys.postman,
  });
  const synced = async () => {
    const response = await fetch(`${indexerUrl}/v1/status`, { headers: { authorization: `Bearer ${indexerToken}` } });
    return ((await response.json()) as { synced: boolean }).synced;
  };
  await waitForService(indexer, "the indexer's first sync", synced);
  say("indexer", `${indexerUrl}: state tree synced, ASP curator screening deposits`);

  // 4. The relayer.
  const relayerUrl = `http://127.0.0.1:${relayerPort}`;
  const relayer = run("relayer", "tsx", [QUIET_SQLITE, "relayer/main.ts"], {
    RELAYER_RPC_URL: rpcUrl,
    RELAYER_PRIVATE_KEY: keys.relayer,
    RELAYER_ADDRESS_BOOK: addressBookFile,
    RELAYER_PORT: String(relayerPort),
    RELAYER_METRICS_PORT: String(metricsPorts.relayer),
    RELAYER_METRICS_HOST: LOOPBACK,
    RELAYER_DB_PATH: path.join(options.logDir, "relayer.sqlite"),
    INDEXER_URL: indexerUrl,
    INDEXER_TOKEN: indexerToken,
    TREASURY_ADDRESS: keys.treasury,
    ...(keys.sellerEip3009 !== undefined && { RELAYER_SELLER_EIP3009_KEY: keys.sellerEip3009 }),
    PAYER_KEY_SECRET: `0x${randomBytes(32).toString("hex")}`,
    // Paid mode at the local chain's default ETH price (2 USDC/ETH, relayer/pricing/pricing.ts): the floor stays under a
    // 5% take of a 0.05 USDC price at this node's ~1 gwei.
    PRICING_MODE: "paid",
  });
  await waitForService(relayer, "the relayer's readiness", async () => (await fetch(`${relayerUrl}/health/ready`)).ok);
  const sellerEip3009Settler = keys.sellerEip3009 === undefined ? undefined : new Wallet(keys.sellerEip3009).address;
  const plainPayments = sellerEip3009Settler === undefined ? "refuse plain payments (no RELAYER_SELLER_EIP3009_KEY)" : `settle plain payments from ${sellerEip3009Settler}`;
  say("relayer", `${relayerUrl}: facilitator API (5% take to the treasury ${keys.treasury}); its seller routes ${plainPayments}`);

  // 5. What Prometheus scrapes, and a Prometheus when asked for.
  const metricsUrl = (port: number) => `http://${LOOPBACK}:${port}/metrics`;
  const [relayerMetricsUrl, indexerMetricsUrl] = [metricsUrl(metricsPorts.relayer), metricsUrl(metricsPorts.indexer)];
  const prometheusConfigFile = path.join(options.logDir, "prometheus.yml");
  await writeFile(prometheusConfigFile, prometheusConfig(metricsPorts));
  const prometheusUrl =
    options.prometheusPort === undefined ? undefined : await startPrometheus(options.prometheusPort, options.variables.prometheusPort, prometheusConfigFile, options.logDir, run);
  if (prometheusUrl !== undefined) say("metrics", `Prometheus ${prometheusUrl}, scraping both with the alert rules of monitoring/rules.yml`);

  const info = {
    rpcUrl,
    chainId,
    addressBookFile,
    indexerUrl,
    indexerToken,
    relayerUrl,
    relayerMetricsUrl,
    indexerMetricsUrl,
    prometheusConfigFile,
    ...(prometheusUrl !== undefined && { prometheusUrl }),
    contracts: { entrypoint: book.entrypoint, privacyPool: book.privacyPool, usdc: book.usdc, batchSettlement: BATCH_SETTLEMENT_ADDRESS },
    ...(sellerEip3009Settler !== undefined && { sellerEip3009Settler }),
    ...(keys.sellerFacilitator !== undefined && { sellerFacilitatorKeys: keys.sellerFacilitator }),
    logDir: options.logDir,
  };
  return { info, book, deployerPrivateKey: keys.deployer };
}

async function chainIdOf(rpcUrl: string): Promise<number> {
  let chainId: number | undefined;
  await waitFor(`the chain at ${rpcUrl}`, async () => {
    const response = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' });
    chainId = Number(((await response.json()) as { result: string }).result);
    return true;
  }, 10_000);
  return chainId!;
}

/** The keys of each part: from the options, else Hardhat's development accounts on a local chain. */
function keysFor(options: StackOptions, chainId: number) {
  const local = chainId === LOCAL_CHAIN_ID;
  const key = (value: string | undefined, role: keyof typeof DEV_ROLES, variable: string) => {
    if (value !== undefined) return value;
    if (local) return devAccount(DEV_ROLES[role]).privateKey;
    throw new ConfigError([`Missing server config: ${variable} (chain ${chainId} has no development accounts)`]);
  };
  const treasury = options.treasury ?? (local ? devAccount(DEV_ROLES.treasury).address : undefined);
  if (treasury === undefined) throw new ConfigError([`Missing server config: ${options.variables.treasury}`]);
  return {
    deployer: local ? devAccount(DEV_ROLES.deployer).privateKey : undefined,
    postman: key(options.postmanPrivateKey, "postman", options.variables.postmanPrivateKey),
    relayer: key(options.relayerPrivateKey, "relayer", options.variables.relayerPrivateKey),
    sellerEip3009: options.sellerEip3009PrivateKey ?? (local ? devAccount(DEV_ROLES.sellerEip3009).privateKey : undefined),
    // Printed for a seller's facilitator of its own: development keys, so on a local chain only.
    sellerFacilitator: local ? { settler: devAccount(DEV_ROLES.sellerFacilitator).privateKey, relay: devAccount(DEV_ROLES.sellerRelay).privateKey } : undefined,
    treasury,
  };
}

/**
 * A fresh node gets a fresh deployment, under an Ignition journal of its own that dies with it; the relaying key needs
 * no role (its sweep's calls are anyone's). x402's batch-settlement contracts
 * (our peers of them, contracts/x402-peers/) are placed where @x402/evm expects them, as Base has them: a private
 * tab's seller and its facilitator find its channel contract there.
 */
async function deployFresh(rpcUrl: string, roles: { postman: string }, logDir: string, say: StackOptions["say"]): Promise<AddressBook> {
  const connection = await hre.network.create({ network: "localhost", override: { url: rpcUrl } });
  const deploymentId = `stack-${path.basename(logDir)}`;
  try {
    const { addressBook } = await deployFacilitator(connection, { ...roles, deploymentId, log: (line) => say("deploy", line) });
    await placeBatchSettlementPeer(connection.ethers);
    say("deploy", `x402's batch-settlement contract at ${BATCH_SETTLEMENT_ADDRESS}, its ERC-3009 deposit collector at ${ERC3009_DEPOSIT_COLLECTOR_ADDRESS} (for sellers' plain buyers)`);
    return addressBook;
  } finally {
    await connection.close();
    await rm(path.join(hre.config.paths.ignition, "deployments", deploymentId), { recursive: true, force: true });
  }
}

import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { HDNodeWallet, Wallet } from "ethers";
import { pino, type DestinationStream } from "pino";
import { RelayerConfigSchema, type RelayerConfig } from "../../../relayer/config.js";
import { createRelayer, proverFor, type Relayer } from "../../../relayer/relayer.js";
import type { Prover } from "../../../relayer/settlement/prover.js";
import type { Note } from "../../../sdk/index.js";
import { noteToWire } from "../../../sdk/client/facilitator-client.js";
import { TEST_TOKEN, type RunningIndexer } from "../../indexer/helpers/indexer-harness.js";
import { OpenApiValidator } from "./openapi-validator.js";
import type { LocalChain } from "../../indexer/helpers/local-chain.js";

const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
/** Accounts of the relayer tests: the relay key pays gas; the treasury only receives. */
export const relayerKey = HDNodeWallet.fromPhrase(HARDHAT_MNEMONIC, undefined, "m/44'/60'/0'/0/14");
export const treasury = HDNodeWallet.fromPhrase(HARDHAT_MNEMONIC, undefined, "m/44'/60'/0'/0/15");
/** The operator secret the test relayers derive settle-x402 payer keys from (fixed, random-looking: a weak one is refused). */
export const PAYER_KEY_SECRET = "0x6f1d2c9a4be07353a8e1c6d40f9b2e7a58c3d1f0e29b84a7c6d5e3f1a0b9c8d7";
/**
 * The ETH price the test relayers convert gas with: at the local chain's ~1.1 gwei it keeps the fee floor (about
 * 1.4k atomic) under the minimum settle, so paid-mode tests see the take and the minimum; fee-floor tests set
 * their own.
 */
export const TEST_USDC_PER_ETH = "2";

/** A relayer config against `chain` and `indexer`, fresh database; any key overridden. */
export function buildRelayerConfig(chain: LocalChain, indexer: RunningIndexer, overrides: Record<string, string> = {}): RelayerConfig {
  return RelayerConfigSchema.parse({
    rpcUrl: chain.rpc.url,
    relayerPrivateKey: relayerKey.privateKey,
    indexerUrl: indexer.url,
    indexerToken: TEST_TOKEN,
    addressBook: chain.addressBookFile,
    treasury: treasury.address,
    payerKeySecret: PAYER_KEY_SECRET,
    usdcPerEth: TEST_USDC_PER_ETH,
    dbPath: path.join(mkdtempSync(path.join(tmpdir(), "relayer-db-")), "relayer.sqlite"),
    logLevel: "silent",
    // The scheduled payer sweep is off unless a test turns it on: the tests that sweep by hand decide when.
    sweepIntervalSeconds: "0",
    // Tests that hold a relay pending by hand (automine off) take seconds on a loaded machine before they mine it:
    // the bound of 8 s for clients would answer them 202 first. Tests of the bound set their own.
    relayInclusionTimeoutMs: "60000",
    ...overrides,
  });
}

export interface RunningRelayer {
  relayer: Relayer;
  /** What it was started with: where its store is, among the rest. */
  config: RelayerConfig;
  url: string;
  /** POSTs JSON and returns the status and parsed body, which must match the OpenAPI document. */
  post(route: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  get(route: string): Promise<{ status: number; body: Record<string, unknown> }>;
  /** Any request to a documented route; the answer must be JSON that matches the OpenAPI document. */
  request(route: string, init?: RequestInit): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }>;
  stop(): Promise<void>;
}

export interface RelayerHarnessOptions {
  /** Where the relayer's log lines go (at config.logLevel); nowhere when absent and the level is silent. */
  logTo?: DestinationStream;
  /** Wraps the relayer's prover (e.g. to see when proofs are done). */
  wrapProver?: (prover: Prover) => Prover;
}

/** The real relayer app in this process, its API on a free port; every answer is checked against its OpenAPI. */
export async function startRelayer(config: RelayerConfig, options: RelayerHarnessOptions = {}): Promise<RunningRelayer> {
  const logger = options.logTo === undefined ? pino({ level: config.logLevel }) : pino({ level: config.logLevel }, options.logTo);
  const prover = proverFor(config, logger);
  const relayer = await createRelayer(config, logger, options.wrapProver?.(prover) ?? prover);
  const server = http.createServer(relayer.app.callback()).listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fetchJson = async (route: string, init?: RequestInit) => {
    const response = await fetch(new URL(route, url), init);
    const text = await response.text();
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new Error(`${init?.method ?? "GET"} ${route} answered ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
    return { status: response.status, headers: response.headers, body };
  };
  const openapi = new OpenApiValidator((await fetchJson("/api/openapi.json")).body as never);
  const request = async (route: string, init?: RequestInit) => {
    const answer = await fetchJson(route, init);
    openapi.assertResponse(init?.method ?? "GET", route, answer.status, answer.body);
    return answer;
  };
  const statusAndBody = async (answer: Promise<{ status: number; body: Record<string, unknown> }>) => {
    const { status, body } = await answer;
    return { status, body };
  };
  return {
    relayer,
    config,
    url,
    post: (route, body) =>
      statusAndBody(request(route, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })),
    get: (route) => statusAndBody(request(route)),
    request,
    async stop() {
      server.closeAllConnections();
      server.close();
      await relayer.close();
    },
  };
}

/** A pino destination that keeps every line written to it, to check what the relayer logs. */
export function logLines(): { lines: string[]; destination: DestinationStream } {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => void lines.push(line) } };
}

/** A note as a request's `serviceDeposit`. */
export const serviceDeposit = (note: Note) => noteToWire(note);

/** A settle-x402 request paying `note` into a fresh seller's exact USDC entry of `amount` on the local chain. */
export const settleX402Body = (chain: LocalChain, note: Note, amount: bigint) => ({
  accepts: {
    scheme: "exact",
    network: "eip155:31337",
    asset: chain.facilitator.addressBook.usdc,
    payTo: Wallet.createRandom().address,
    amount: amount.toString(),
    maxTimeoutSeconds: 600,
    extra: { name: "USDC", version: "2" },
  },
  serviceDeposit: noteToWire(note),
  acceptNotPrivate: true,
});

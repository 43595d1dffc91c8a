import { spawnService, type ServiceProcess } from "../../helpers/service-process.js";
import { TEST_TOKEN, type RunningIndexer } from "../../indexer/helpers/indexer-harness.js";
import type { LocalChain } from "../../indexer/helpers/local-chain.js";
import { PAYER_KEY_SECRET, relayerKey, TEST_USDC_PER_ETH, treasury } from "./relayer-harness.js";

export interface RelayerProcess extends ServiceProcess {
  url: string;
  /** POSTs JSON; `lost` when the connection broke before an answer (the process died). */
  post(route: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> } | "lost">;
}

/** The environment of a relayer process against `chain` and `indexer`, as an operator writes it; any key overridden. */
export function relayerEnv(chain: LocalChain, indexer: Pick<RunningIndexer, "url">, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    RELAYER_RPC_URL: chain.rpc.url,
    RELAYER_PRIVATE_KEY: relayerKey.privateKey,
    RELAYER_ADDRESS_BOOK: chain.addressBookFile,
    INDEXER_URL: indexer.url,
    INDEXER_TOKEN: TEST_TOKEN,
    TREASURY_ADDRESS: treasury.address,
    PAYER_KEY_SECRET,
    RELAYER_PORT: "0",
    PRICING_MODE: "paid",
    RELAYER_USDC_PER_ETH: TEST_USDC_PER_ETH,
    LOG_LEVEL: "info",
    ...overrides,
  };
}

/** Starts `relayer/main.ts` as its own process and waits until it listens. */
export async function startRelayerProcess(env: Record<string, string>): Promise<RelayerProcess> {
  const child = spawnService("relayer/main.ts", [], env);
  const listening = await Promise.race([
    child.logLine("relayer listening", 120_000),
    child.exited.then((outcome) => {
      throw new Error(`the relayer exited (${outcome}) before listening:\n${child.lines.join("\n")}`);
    }),
  ]);
  const url = `http://127.0.0.1:${listening.port as number}`;
  return {
    ...child,
    url,
    async post(route, body) {
      try {
        const response = await fetch(new URL(route, url), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      } catch {
        return "lost";
      }
    },
  };
}

// A seller that accepts x402's `batch-settlement` scheme as @x402/evm ships it: `paymentMiddleware` of @x402/express
// over `x402ResourceServer` with @x402/evm's batch-settlement server scheme, its channels in @x402/evm's own file
// storage (they survive a restart), claims through @x402/evm's channel manager. No glue besides the route.
import { HTTPFacilitatorClient } from "@x402/core/server";
import type { Network } from "@x402/core/types";
import { BatchSettlementChannelManager, BatchSettlementEvmScheme, type ChannelStorage } from "@x402/evm/batch-settlement/server";
import { FileChannelStorage } from "@x402/evm/batch-settlement/server/file-storage";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import express, { type RequestHandler } from "express";
import { privateKeyToAccount } from "viem/accounts";
import { listenLocal, type LocalServer } from "./local-server.js";
import { PAID_PATH, WEATHER_REPORT } from "./seller.js";

export interface BatchSettlementSellerOptions {
  facilitatorUrl: string;
  /** CAIP-2, e.g. eip155:31337. */
  network: string;
  payTo: `0x${string}`;
  asset: `0x${string}`;
  /** The price of one request, in atomic units of `asset`. */
  amountAtomic: string;
  /** The key that signs the seller's claims and refunds (the channels' receiverAuthorizer). */
  receiverAuthorizerKey: `0x${string}`;
  /** Where @x402/evm's FileChannelStorage keeps the seller's channels. */
  storageDirectory: string;
  /** The seller's channel storage, in place of FileChannelStorage under storageDirectory (a test's, to stop at a write). */
  storage?: ChannelStorage;
  /** How long a payment may take, in seconds (default 60); @x402/evm's server holds a channel this long for a request. */
  maxTimeoutSeconds?: number;
  /** 0 (default) picks a free port. */
  port?: number;
  /** What the paid route does once paid; by default it serves the weather report. */
  serve?: RequestHandler;
  /** How long the seller trusts its record of a channel before reading it from the chain again (@x402/evm's onchainStateTtlMs). */
  onchainStateTtlMs?: number;
}

export interface BatchSettlementSeller extends LocalServer {
  resourceUrl: string;
  /** @x402/evm's manager of this seller's channels: claim, settle, refund. */
  channels: BatchSettlementChannelManager;
  /** How many times the default paid handler served the report. */
  served(): number;
}

/** Starts the seller of GET /weather priced per request under `batch-settlement`; start its facilitator first. */
export async function startBatchSettlementSeller(options: BatchSettlementSellerOptions): Promise<BatchSettlementSeller> {
  const network = options.network as Network;
  const facilitator = new HTTPFacilitatorClient({ url: options.facilitatorUrl });
  const scheme = new BatchSettlementEvmScheme(options.payTo, {
    receiverAuthorizerSigner: privateKeyToAccount(options.receiverAuthorizerKey),
    storage: options.storage ?? new FileChannelStorage({ directory: options.storageDirectory }),
    ...(options.onchainStateTtlMs !== undefined && { onchainStateTtlMs: options.onchainStateTtlMs }),
  });
  const server = new x402ResourceServer(facilitator).register(network, scheme);
  const price = { amount: options.amountAtomic, asset: options.asset, extra: { name: "USDC", version: "2" } };
  const routes = {
    [`GET ${PAID_PATH}`]: {
      accepts: [{ scheme: "batch-settlement", network, payTo: options.payTo, price, maxTimeoutSeconds: options.maxTimeoutSeconds ?? 60 }],
      description: "Weather report",
      mimeType: "application/json",
    },
  };
  let served = 0;
  const app = express();
  const serveReport: RequestHandler = (_request, response) => {
    served += 1;
    response.json(WEATHER_REPORT);
  };
  app.get(PAID_PATH, paymentMiddleware(routes, server), options.serve ?? serveReport);
  const listening = await listenLocal(app, options.port ?? 0);
  const channels = new BatchSettlementChannelManager({ scheme, facilitator, receiver: options.payTo, token: options.asset, network });
  return { ...listening, resourceUrl: `${listening.url}${PAID_PATH}`, channels, served: () => served };
}

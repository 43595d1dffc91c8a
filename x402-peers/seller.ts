import { HTTPFacilitatorClient } from "@x402/core/server";
import type { Network } from "@x402/core/types";
import type { PaymentRequirementsV1 } from "@x402/core/types/v1";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import express, { type Request, type RequestHandler } from "express";
import { MemoryServedPayments, ShieldedServerScheme, type ServedPayments } from "../seller/index.js";
import { SHIELDED_PROOF } from "../sdk/x402/shielded.js";
import { listenLocal, type LocalServer } from "./local-server.js";
import { v1PaymentMiddleware } from "./v1-seller.js";

/** The paid route and what it serves once paid. */
export const PAID_PATH = "/weather";
export const WEATHER_REPORT = { report: { weather: "sunny", temperature: 70 } };
/** v2: a second route at the same price, so that a payment for one request can be tried on another. */
export const OTHER_PAID_PATH = "/forecast";
export const FORECAST = { forecast: { tomorrow: "rain" } };

export interface SellerOptions {
  /** Base URL of the x402 facilitator that verifies and settles (POST /verify, POST /settle, GET /supported). */
  facilitatorUrl: string;
  x402Version: 1 | 2;
  /** v2: CAIP-2 (eip155:31337); v1: the network's slug (hardhat, base-sepolia). */
  network: string;
  payTo: string;
  /** The token's address (USDC). */
  asset: string;
  /** The price in atomic units of `asset`, e.g. "10000" for 0.01 USDC. */
  amountAtomic: string;
  /**
   * The token's EIP-712 domain; USDC's on Base Sepolia by default. null: the entry names none (v2: `extra: {}`, what
   * @x402/express emits for a price without one; v1: no `extra`, as x402-express 1.x for an asset without eip712).
   */
  assetDomain?: { name: string; version: string } | null;
  /** How long a payment authorization must stay valid; default 60 seconds. */
  maxTimeoutSeconds?: number;
  /** 0 (default) picks a free port. */
  port?: number;
  /**
   * v2: what the seller's 402 offers: an EIP-3009 payment (the default), payment by shielded proof (its server
   * registers ShieldedServerScheme), or both, the EIP-3009 entry first: a plain x402 client pays the first entry
   * its scheme can sign (the reference selector), while a private agent finds the shielded-proof entry wherever it is.
   */
  offers?: "eip3009" | "shielded-proof" | "both";
  /**
   * Where a shielded-proof seller records the payments it answered; this process's memory by default (one process,
   * and a restart forgets).
   */
  served?: ServedPayments;
  /** The shielded-proof references' secret; every instance of one seller needs the same. A fresh one by default. */
  referenceSecret?: Uint8Array;
  /** How long one request holds its payment (ShieldedServerScheme's serveLeaseSeconds); 120 s by default. */
  serveLeaseSeconds?: number;
  /** How long the paid route's handler works before it answers (a slow handler: an LLM answer, a report); 0 by default. */
  handlerDelayMs?: number;
}

export interface Seller extends LocalServer {
  /** The paid resource's URL. */
  resourceUrl: string;
}

type ResolvedSellerOptions = Required<Omit<SellerOptions, "served" | "referenceSecret" | "serveLeaseSeconds" | "handlerDelayMs">> &
  Pick<SellerOptions, "served" | "referenceSecret" | "serveLeaseSeconds" | "handlerDelayMs">;

const DESCRIPTION = "Weather report";
const MIME_TYPE = "application/json";

/** v2: the reference seller, `paymentMiddleware` of @x402/express over the `exact` EVM server scheme. */
function v2Middleware(options: ResolvedSellerOptions): RequestHandler {
  const network = options.network as Network;
  const shielded = options.offers !== "eip3009";
  const exact = new ExactEvmScheme();
  const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: options.facilitatorUrl })).register(
    network,
    shielded
      ? new ShieldedServerScheme({
          served: options.served ?? new MemoryServedPayments(),
          ...(options.referenceSecret !== undefined && { referenceSecret: options.referenceSecret }),
          ...(options.serveLeaseSeconds !== undefined && { serveLeaseSeconds: options.serveLeaseSeconds }),
          ...(options.offers === "both" && { inner: exact }),
        })
      : exact,
  );
  const entry = {
    scheme: "exact",
    network,
    payTo: options.payTo,
    maxTimeoutSeconds: options.maxTimeoutSeconds,
  };
  // An explicit amount and asset: the reference knows no default asset on a local chain.
  const eip3009Entry = { ...entry, price: { amount: options.amountAtomic, asset: options.asset, extra: options.assetDomain ?? undefined } };
  const shieldedEntry = { ...entry, price: { amount: options.amountAtomic, asset: options.asset }, extra: { assetTransferMethod: SHIELDED_PROOF } };
  const accepts = { eip3009: [eip3009Entry], "shielded-proof": [shieldedEntry], both: [eip3009Entry, shieldedEntry] }[options.offers];
  const routes = {
    [`GET ${PAID_PATH}`]: {
      accepts,
      description: DESCRIPTION,
      mimeType: MIME_TYPE,
    },
    [`GET ${OTHER_PAID_PATH}`]: {
      accepts,
      description: "Forecast",
      mimeType: MIME_TYPE,
    },
  };
  return paymentMiddleware(routes, server);
}

/** v1: glue over reference parts (v1-seller.ts), with the entry the v1 reference middleware advertised. */
function v1Middleware(options: ResolvedSellerOptions): RequestHandler {
  return v1PaymentMiddleware(new HTTPFacilitatorClient({ url: options.facilitatorUrl }), (request: Request) => ({
    scheme: "exact",
    network: options.network as Network,
    maxAmountRequired: options.amountAtomic,
    resource: `${request.protocol}://${request.headers.host}${request.path}`,
    description: DESCRIPTION,
    mimeType: MIME_TYPE,
    outputSchema: {},
    payTo: options.payTo,
    maxTimeoutSeconds: options.maxTimeoutSeconds,
    asset: options.asset,
    // The reference v1 type requires `extra`; x402-express 1.x left it out for an asset without a domain.
    ...(options.assetDomain !== null && { extra: options.assetDomain }),
  }) as PaymentRequirementsV1);
}

/**
 * An x402 seller on 127.0.0.1 with one paid route, GET /weather, priced at `amountAtomic` of `asset` under the
 * `exact` scheme. Payments are verified and settled by the facilitator at `facilitatorUrl`; a v2 seller asks it
 * for its supported kinds at start, so start the facilitator first.
 */
export async function startSeller(options: SellerOptions): Promise<Seller> {
  const resolved = {
    ...options,
    assetDomain: options.assetDomain === undefined ? { name: "USDC", version: "2" } : options.assetDomain,
    maxTimeoutSeconds: options.maxTimeoutSeconds ?? 60,
    port: options.port ?? 0,
    offers: options.offers ?? "eip3009",
  };
  const app = express();
  // One middleware for every paid route: one server, one reference secret.
  const paid = resolved.x402Version === 2 ? v2Middleware(resolved) : v1Middleware(resolved);
  app.get(PAID_PATH, paid, async (_request, response) => {
    if (resolved.handlerDelayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, resolved.handlerDelayMs));
    response.json(WEATHER_REPORT);
  });
  if (resolved.x402Version === 2) {
    app.get(OTHER_PAID_PATH, paid, (_request, response) => {
      response.json(FORECAST);
    });
  }
  const server = await listenLocal(app, resolved.port);
  return { ...server, resourceUrl: `${server.url}${PAID_PATH}` };
}

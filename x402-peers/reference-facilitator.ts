import { x402Facilitator } from "@x402/core/facilitator";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/facilitator";
import { ExactEvmScheme, registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/facilitator";
import { EVM_NETWORK_CHAIN_ID_MAP, NETWORKS } from "@x402/evm/v1";
import express, { type Request, type Response } from "express";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { JsonRpcProvider, Wallet } from "ethers";
import { ShieldedFacilitatorScheme, type ShieldedFacilitatorSchemeOptions } from "../seller/index.js";
import { listenLocal, type LocalServer } from "./local-server.js";
import { caip2NetworkOf, v1NetworkOf } from "../sdk/x402/networks.js";
import { viemFacilitatorSigner } from "../lib/viem-facilitator-signer.js";

export interface ReferenceFacilitatorOptions {
  /** JSON-RPC of the chain the payments settle on. */
  rpcUrl: string;
  chainId: number;
  /** Key of the account that submits transferWithAuthorization and pays its gas. */
  privateKey: Hex;
  /** 0 (default) picks a free port. */
  port?: number;
  /**
   * Also relay shielded-proof payments (seller/shielded-facilitator-scheme.ts) of this pool, from the account of
   * `privateKey` (its own nonces: the viem account settles EIP-3009 payments).
   */
  shielded?: Pick<ShieldedFacilitatorSchemeOptions, "deployment" | "minimumFee" | "usdcPerEth" | "feeRecipient" | "metrics" | "inclusionTimeoutMs"> & { privateKey: string };
  /** Also verify and settle @x402/evm's `batch-settlement` (its contracts must be on the chain: batch-settlement.ts). */
  batchSettlement?: boolean;
}

export interface ReferenceFacilitator extends LocalServer {
  /** The account that submits the settlements. */
  address: Address;
}

/**
 * The reference x402 facilitator (`x402Facilitator` of @x402/core with the `exact` EVM scheme of @x402/evm, v2
 * and v1) behind the HTTP routes the reference facilitator example serves and the reference
 * HTTPFacilitatorClient calls: POST /verify, POST /settle, GET /supported.
 *
 * v2 handles any `eip155:<chainId>`. v1 is registered for the package's own network slugs (NETWORKS), and its
 * scheme resolves chain ids through the package's table, which has no local chain: a chain whose slug
 * (networks.ts) is not there gets it added to that table (process-wide, idempotent) and the v1 scheme
 * registered for it.
 */
export async function startReferenceFacilitator(options: ReferenceFacilitatorOptions): Promise<ReferenceFacilitator> {
  const account = privateKeyToAccount(options.privateKey);
  const signer = viemFacilitatorSigner(account, options);
  const network = caip2NetworkOf(options.chainId);
  const facilitator =
    options.shielded === undefined
      ? registerExactEvmScheme(new x402Facilitator(), { signer, networks: network })
      : new x402Facilitator().register(
          network,
          new ShieldedFacilitatorScheme({
            ...options.shielded,
            inner: new ExactEvmScheme(signer),
            wallet: new Wallet(options.shielded.privateKey, new JsonRpcProvider(options.rpcUrl, options.chainId, { staticNetwork: true })),
          }),
        );
  if (options.batchSettlement === true) facilitator.register(network, new BatchSettlementEvmScheme(signer));
  const v1Network = v1NetworkOf(options.chainId);
  if (v1Network !== undefined && !NETWORKS.includes(v1Network)) {
    (EVM_NETWORK_CHAIN_ID_MAP as Record<string, number>)[v1Network] = options.chainId;
    facilitator.registerV1(v1Network as PaymentRequirements["network"], new ExactEvmSchemeV1(signer));
  }

  type Body = { paymentPayload?: PaymentPayload; paymentRequirements?: PaymentRequirements };
  const route =
    (run: (payload: PaymentPayload, requirements: PaymentRequirements) => Promise<unknown>) =>
    async (request: Request<unknown, unknown, Body>, response: Response) => {
      const { paymentPayload, paymentRequirements } = request.body ?? {};
      if (!paymentPayload || !paymentRequirements) {
        response.status(400).json({ error: "Missing paymentPayload or paymentRequirements" });
        return;
      }
      try {
        response.json(await run(paymentPayload, paymentRequirements));
      } catch (error) {
        response.status(500).json({ error: error instanceof Error ? error.message : String(error) });
      }
    };

  const app = express();
  app.use(express.json());
  app.post("/verify", route((payload, requirements) => facilitator.verify(payload, requirements)));
  app.post("/settle", route((payload, requirements) => facilitator.settle(payload, requirements)));
  app.get("/supported", (_request, response) => {
    response.json(facilitator.getSupported());
  });
  const server = await listenLocal(app, options.port);
  return { ...server, address: account.address };
}

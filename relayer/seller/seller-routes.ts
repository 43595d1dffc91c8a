import Router from "@koa/router";
import type { Context } from "koa";
import type { ShieldedPayments } from "../../seller/index.js";
import { ROUTES } from "../http/paths.js";
import { parseWith } from "../http/parse.js";
import type { Readiness } from "../ops/readiness.js";
import { SellerFacilitatorRequestSchema } from "../schemas/seller.js";
import { sellerSupported } from "./seller-facilitator.js";

export interface SellerRouteDeps {
  payments: ShieldedPayments;
  /** The relaying key: the signer `supported` names. */
  relayer: string;
  readiness: Pick<Readiness, "assertReady">;
}

const body = (ctx: Context) => (ctx.request as { body?: unknown }).body;

/**
 * The seller-side facilitator routes (docs/api.md 4.9): x402's supported, verify and settle under /api/seller, for a
 * seller that names `<relayer>/api/seller` as its facilitator. Refusals are x402 answers (200 with isValid or success
 * false and the reason), as the reference facilitator gives them; faults are the relayer's typed errors.
 */
export function sellerRouter({ payments, relayer, readiness }: SellerRouteDeps): Router {
  const router = new Router();

  router.get(ROUTES.sellerSupported, (ctx) => {
    ctx.body = sellerSupported(payments, relayer);
  });

  router.post(ROUTES.sellerVerify, async (ctx) => {
    const { paymentPayload, paymentRequirements } = parseWith(SellerFacilitatorRequestSchema, body(ctx));
    ctx.body = await payments.verify(paymentPayload, paymentRequirements);
  });

  router.post(ROUTES.sellerSettle, async (ctx) => {
    const { paymentPayload, paymentRequirements } = parseWith(SellerFacilitatorRequestSchema, body(ctx));
    // A relay leaves only from a relayer that can pay its gas and read the chain; one that cannot is an outage.
    const notReady = await readiness.assertReady().then(
      () => undefined,
      (error: Error) => error,
    );
    ctx.body = notReady === undefined ? await payments.settle(paymentPayload, paymentRequirements) : payments.unavailable(notReady.message);
  });

  return router;
}

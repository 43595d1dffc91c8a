import Router from "@koa/router";
import type { x402Facilitator } from "@x402/core/facilitator";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { Context } from "koa";
import { ROUTES } from "../http/paths.js";
import { parseWith } from "../http/parse.js";
import type { Readiness } from "../ops/readiness.js";
import { offersShieldedProof } from "../../sdk/x402/shielded.js";
import { settleUnavailable, verifyUnavailable } from "../../seller/index.js";
import { PlainExactPayloadSchema, SellerFacilitatorRequestSchema } from "../schemas/seller.js";

export interface SellerRouteDeps {
  /** The seller routes' x402 facilitator (sellerX402Facilitator). */
  facilitator: x402Facilitator;
  readiness: Pick<Readiness, "assertReady">;
}

/** x402's reasons for a payment of a scheme or network the facilitator does not settle, and for a payload that does not read. */
const UNSUPPORTED_KIND = "unsupported_scheme";
const INVALID_PAYLOAD = "invalid_payload";

/** The payment and its entry of a seller-side request, as x402's types. */
function requestOf(ctx: Context): { payload: PaymentPayload; requirements: PaymentRequirements } {
  const { paymentPayload, paymentRequirements } = parseWith(SellerFacilitatorRequestSchema, (ctx.request as { body?: unknown }).body);
  // The schemes check every field they read; the schema checked what routes the request.
  return { payload: paymentPayload as unknown as PaymentPayload, requirements: paymentRequirements as unknown as PaymentRequirements };
}

/**
 * The seller-side facilitator routes (docs/api.md 4.9): x402's supported, verify and settle under /api/seller, for a
 * seller that names `<relayer>/api/seller` as its facilitator. Refusals are x402 answers (200 with isValid or success
 * false and the reason), as the reference facilitator gives them; a fault (the chain, the store, a scheme, a relayer
 * not ready) is an x402 answer too, with the retryable reason `shielded_facilitator_unavailable`, never a 500.
 */
export function sellerRouter({ facilitator, readiness }: SellerRouteDeps): Router {
  const router = new Router();
  /** Why the payment cannot be handed to the facilitator's scheme, as x402's reason and message; undefined when it can. */
  const refusal = (payload: PaymentPayload, requirements: PaymentRequirements): { reason: string; message: string } | undefined => {
    const { scheme, network } = requirements;
    if (!facilitator.getSupported().kinds.some((kind) => kind.scheme === scheme && kind.network === network)) {
      return { reason: UNSUPPORTED_KIND, message: `This facilitator settles no ${scheme} payment on ${network}: see its supported kinds.` };
    }
    // A shielded-proof payload is checked field by field by its verification; a plain one is checked here.
    if (offersShieldedProof(requirements)) return undefined;
    const plain = PlainExactPayloadSchema.safeParse(payload.payload);
    return plain.success ? undefined : { reason: INVALID_PAYLOAD, message: "The payload is neither an EIP-3009 authorization nor a Permit2 one, with its signature." };
  };

  router.get(ROUTES.sellerSupported, (ctx) => {
    ctx.body = facilitator.getSupported();
  });

  router.post(ROUTES.sellerVerify, async (ctx) => {
    const { payload, requirements } = requestOf(ctx);
    const refused = refusal(payload, requirements);
    ctx.body =
      refused !== undefined
        ? { isValid: false, invalidReason: refused.reason, invalidMessage: refused.message }
        : await facilitator.verify(payload, requirements).catch((error: Error) => verifyUnavailable(error.message));
  });

  router.post(ROUTES.sellerSettle, async (ctx) => {
    const { payload, requirements } = requestOf(ctx);
    const refused = refusal(payload, requirements);
    if (refused !== undefined) {
      ctx.body = { success: false, errorReason: refused.reason, errorMessage: refused.message, transaction: "", network: requirements.network };
      return;
    }
    const unavailable = (why: string) => settleUnavailable(requirements.network, why);
    // A relay leaves only from a relayer that can pay its gas and read the chain and the pool's trees; one that cannot
    // is an outage. A plain payment needs none of that (its own key pays, and the reference scheme simulates it
    // first): a cold indexer or an empty relaying key must not turn away a seller's plain buyers.
    if (offersShieldedProof(requirements)) {
      const notReady = await readiness.assertReady().then(
        () => undefined,
        (error: Error) => error,
      );
      if (notReady !== undefined) {
        ctx.body = unavailable(notReady.message);
        return;
      }
    }
    ctx.body = await facilitator.settle(payload, requirements).catch((error: Error) => unavailable(error.message));
  });

  return router;
}

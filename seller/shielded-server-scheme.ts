import { randomBytes } from "node:crypto";
import type { HTTPTransportContext } from "@x402/core/server";
import type {
  AssetAmount,
  Network,
  PaymentFlowConfig,
  PaymentRequirements,
  Price,
  SchemeNetworkServer,
  SchemeServerHooks,
  SupportedKind,
} from "@x402/core/types";
import { offersShieldedProof, SHIELDED_DYNAMIC_EXTRA_FIELDS, SHIELDED_PROOF, ShieldedFacilitatorExtraSchema } from "../sdk/x402/shielded.js";
import { RequestReferences, type ReferencedRequest } from "./request-reference.js";
import type { Registry } from "prom-client";
import { ServeMetrics } from "./serve-metrics.js";
import { DEFAULT_SERVE_LEASE_SECONDS, ServeOnce } from "./serve-once.js";
import type { ServedPayments } from "./served-payments.js";
import { SHIELDED_REASONS } from "./shielded-reasons.js";

export interface ShieldedServerSchemeOptions {
  /**
   * The `exact` server scheme for the entries that do not pay by shielded proof (ExactEvmScheme of @x402/evm): a seller
   * can offer both, and the x402 server holds one `exact` scheme per network. Without it, only shielded-proof entries.
   */
  inner?: SchemeNetworkServer;
  /**
   * The secret the seller's references are made with (32 bytes or more). Every instance of one seller needs the same
   * one; without it each process makes its own, and a payment answered by another instance is refused.
   */
  referenceSecret?: Uint8Array;
  /**
   * Which payments were answered: a payment is served once, and one paid but not answered (a crash, a lost answer, a
   * copy settled by someone else first) is served when presented again. Every instance of the seller must share it
   * and it must outlive restarts (PostgresServedPayments, or SqliteServedPayments on one host);
   * MemoryServedPayments only where the seller runs one process and accepts that a restart forgets.
   */
  served: ServedPayments;
  /** How long one request holds its payment while it is verified, handled and settled; default 120 s. */
  serveLeaseSeconds?: number;
  /** Where to count the payments served and not taken, and read the unanswered ones (ServeMetrics, docs/operations.md). */
  metrics?: Registry;
  nowSeconds?: () => number;
}

/** The request of an HTTP transport context, as the x402 HTTP server hands it to the scheme's hooks. */
function requestOf(transportContext: unknown): { method: string; path: string } | undefined {
  const request = (transportContext as HTTPTransportContext | undefined)?.request;
  return request === undefined ? undefined : { method: request.method, path: request.path };
}

/**
 * The `exact` scheme of an @x402/core resource server (`x402ResourceServer.register(network, scheme)`) that also
 * offers payment by shielded proof (docs/x402-interop.md, "Shielded proof"): a route entry whose `extra` names
 * `assetTransferMethod: "shielded-proof"` gets the facilitator's terms (pool, entrypoint, fee recipient, least fee,
 * from its `supported`) and, in every 402, a fresh reference of the request; a payment is verified only when its
 * reference was issued by this seller for this request's method, path, payTo and price, and was live when it was
 * made. Each payment is answered once (ServeOnce, over the seller's ServedPayments). Every other entry is the inner
 * scheme's.
 */
export class ShieldedServerScheme implements SchemeNetworkServer {
  readonly scheme = "exact";
  readonly defaultAssetTransferMethod: string;
  readonly paymentFlows: Readonly<Record<string, PaymentFlowConfig>>;
  readonly dynamicExtraFields: string[];
  readonly schemeHooks: SchemeServerHooks;
  private readonly references: RequestReferences;

  constructor(private readonly options: ShieldedServerSchemeOptions) {
    const { inner } = options;
    if (options.served === undefined) {
      throw new TypeError("ShieldedServerScheme needs `served`, the record of the payments it answered: PostgresServedPayments or SqliteServedPayments, or MemoryServedPayments for one process.");
    }
    this.defaultAssetTransferMethod = inner?.defaultAssetTransferMethod ?? SHIELDED_PROOF;
    // The facilitator verifies before the handler runs and settles after it: nothing moves unless the seller serves.
    this.paymentFlows = { ...inner?.paymentFlows, [SHIELDED_PROOF]: { supported: ["authorization"], default: "authorization" } };
    this.dynamicExtraFields = [...(inner?.dynamicExtraFields ?? []), ...SHIELDED_DYNAMIC_EXTRA_FIELDS];
    this.references = new RequestReferences(options.referenceSecret ?? randomBytes(32), options.nowSeconds);
    const metrics = options.metrics && new ServeMetrics(options.metrics, options.served);
    const serveOnce = new ServeOnce(options.served, options.serveLeaseSeconds ?? DEFAULT_SERVE_LEASE_SECONDS, options.nowSeconds, metrics);
    this.schemeHooks = {
      ...inner?.schemeHooks,
      ...serveOnce.hooks((accepted) => accepted !== undefined && offersShieldedProof(accepted as PaymentRequirements), inner?.schemeHooks, async (context) => {
        const accepted = context.paymentPayload.accepted as PaymentRequirements;
        const request = requestOf(context.transportContext);
        const validBefore = Number((context.paymentPayload.payload as { validBefore?: unknown }).validBefore);
        const problem =
          request === undefined
            ? "the payment reached the seller without an HTTP request to check its reference against"
            : this.references.problem(String(accepted.extra.reference), referenced(request, context.requirements as PaymentRequirements), Number.isSafeInteger(validBefore) ? validBefore : Number.MAX_SAFE_INTEGER);
        return problem === undefined ? undefined : { abort: true, reason: SHIELDED_REASONS.referenceInvalid, message: `${problem}.` };
      }),
    };
  }

  async parsePrice(price: Price, network: Network): Promise<AssetAmount> {
    if (this.options.inner !== undefined) return this.options.inner.parsePrice(price, network);
    if (typeof price === "object" && price !== null && "amount" in price && price.asset) return price;
    throw new Error(`A shielded-proof price on ${network} needs an explicit amount and asset (or an inner scheme that parses money).`);
  }

  getAssetDecimals(asset: string, network: Network): number | undefined {
    return this.options.inner?.getAssetDecimals?.(asset, network);
  }

  async enhancePaymentRequirements(requirements: PaymentRequirements, supportedKind: SupportedKind, facilitatorExtensions: string[]): Promise<PaymentRequirements> {
    if (!offersShieldedProof(requirements)) {
      if (this.options.inner === undefined) throw new Error("This seller's exact scheme pays by shielded proof only: name assetTransferMethod \"shielded-proof\" in the entry's extra.");
      const { inner } = this.options;
      const enhanced = await inner.enhancePaymentRequirements(requirements, supportedKind, facilitatorExtensions);
      // Named: x402 takes a payment for the first entry whose extra is a subset of the payment's, and an unnamed plain
      // entry's (the asset's EIP-712 name and version) is a subset of a shielded-proof payment's of the same price.
      const method = inner.defaultAssetTransferMethod;
      return method === undefined ? enhanced : { ...enhanced, extra: { assetTransferMethod: method, ...enhanced.extra } };
    }
    const terms = ShieldedFacilitatorExtraSchema.safeParse(supportedKind.extra);
    if (!terms.success) {
      throw new Error(`The facilitator does not relay shielded-proof payments on ${supportedKind.network}: its supported kind's extra is not a shielded-proof facilitator's.`);
    }
    return { ...requirements, extra: { ...requirements.extra, ...terms.data } };
  }

  /** Gives each shielded-proof entry of a 402 a fresh reference of the request it answers. */
  enrichPaymentRequiredResponse = async ({ requirements, transportContext }: { requirements: PaymentRequirements[]; transportContext?: unknown }) => {
    const request = requestOf(transportContext);
    if (request === undefined) return undefined;
    return requirements.map((entry) =>
      offersShieldedProof(entry) && entry.extra.reference === undefined
        ? { ...entry, extra: { ...entry.extra, reference: this.references.issue(referenced(request, entry), entry.maxTimeoutSeconds) } }
        : entry,
    );
  };
}

function referenced(request: { method: string; path: string }, entry: Pick<PaymentRequirements, "payTo" | "amount">): ReferencedRequest {
  return { ...request, payTo: entry.payTo, amount: entry.amount };
}

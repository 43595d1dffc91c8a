import type { PaymentResponseContext, SelectPaymentRequirements, x402Client } from "@x402/core/client";
import type {
  DefaultAsset,
  PaymentPayloadContext,
  PaymentPayloadResult,
  PaymentRequired as CorePaymentRequired,
  PaymentRequirements,
  SchemeClientHooks,
  SchemeNetworkClient,
} from "@x402/core/types";
import {
  caip2NetworkOf,
  chainIdOfNetwork,
  decodeXPayment,
  offersShieldedProof,
  isRetryableShieldedReason,
  v1NetworkOf,
  type PaymentRequired,
  type ResourceInfo,
} from "../x402/index.js";
import type { X402AgentOptions } from "./agent-options.js";
import { AgentWallet } from "./agent-wallet.js";
import { paymentNotAccepted, ShieldedPaymentRefusedError, type X402Settlement } from "./payment-refusals.js";
import { PoolExactPayments } from "./pool-exact-payments.js";
import { ShieldedPayments, type ShieldedPayment } from "./shielded-payments.js";

/**
 * What the scheme pays with: an X402Agent's options (the facilitator, the notes, the caps, the budget, custody). It
 * never probes the seller: an @x402/core client hands a scheme no request to probe with.
 */
export type PrivatePoolSchemeOptions = Omit<X402AgentOptions, "probe">;

/** A v2 payment the scheme made, until the seller's answer to it comes back through the payment-response hook. */
interface PendingPayment {
  url: string;
  settlement: X402Settlement;
}

/**
 * The `exact` scheme of an @x402/core client (`x402Client.register(network, scheme)`) that pays out of the privacy
 * pool with the modules X402Agent.fetch uses, over a wallet of its own: a shielded-proof entry by the agent's own proof
 * (ShieldedPayments), any other entry through the pinned facilitator's detour (PoolExactPayments: caps, budget, typed
 * errors, proving where it can), returning the payment from the pool that the relay authorized. The agent's address is
 * in no transaction of it.
 */
export class PrivatePoolScheme implements SchemeNetworkClient {
  readonly scheme = "exact";
  /** The facilitator's chain and USDC: the only entries the scheme pays. */
  readonly network: X402AgentOptions["network"];
  private readonly exact: PoolExactPayments;
  private readonly shielded: ShieldedPayments;
  /** The 402 each selected entry came from (its resource, its URL), handed over by the client's before-creation hook. */
  private readonly requiredOf = new WeakMap<object, CorePaymentRequired>();
  /** v2 payments by their authorization's nonce, until the seller answers them. */
  private readonly pending = new Map<string, PendingPayment>();
  /** Shielded-proof payments by the spent note's nullifier hash, until the seller answers them. */
  private readonly pendingShielded = new Map<string, { url: string; proven: ShieldedPayment }>();

  readonly schemeHooks: SchemeClientHooks = {
    onBeforePaymentCreation: async ({ paymentRequired, selectedRequirements }) => {
      this.requiredOf.set(selectedRequirements, paymentRequired);
    },
    onPaymentResponse: async (context) => this.onPaymentResponse(context),
  };

  constructor(options: PrivatePoolSchemeOptions) {
    this.network = options.network;
    this.findDefaultAsset = facilitatorUsdc(options.network);
    const wallet = new AgentWallet(options);
    this.exact = new PoolExactPayments(wallet);
    this.shielded = new ShieldedPayments(wallet);
  }

  readonly findDefaultAsset: ReturnType<typeof facilitatorUsdc>;

  async createPaymentPayload(x402Version: number, requirements: PaymentRequirements, context?: PaymentPayloadContext): Promise<PaymentPayloadResult> {
    const required = this.requiredOf.get(requirements);
    const resource: ResourceInfo | undefined = x402Version === 2 && required !== undefined ? { ...required.resource } : undefined;
    const url = resource?.url ?? v1ResourceOf(requirements) ?? `the seller paid at ${requirements.payTo}`;
    const cap = context?.maxAmountPerPayment;
    const shielded = x402Version === 2 && resource !== undefined ? await this.shielded.entryOf({ x402Version: 2, resource, accepts: [requirements] }) : undefined;
    if (shielded !== undefined) {
      // Paid by the agent's own proof, relayed by the seller's facilitator when it settles: nothing moves before.
      const proven = await this.shielded.prove(url, shielded, cap === undefined ? undefined : BigInt(cap));
      this.pendingShielded.set(proven.payload.nullifiers[0]!, { url, proven });
      return { x402Version: 2, payload: { ...proven.payload } };
    }
    // The entry the client selected, checked as fetch checks a 402's entries: exact, the facilitator's USDC and chain.
    const accepted = this.exact.usableEntry({ x402Version: 1, accepts: [requirements] } as PaymentRequired, url);
    const settlement = await this.exact.payRequirement(accepted, { url, resource, ...(cap !== undefined && { maxPaymentAtomic: BigInt(cap) }) });
    const payment = decodeXPayment(settlement.xPayment);
    if (payment.x402Version === 2) this.pending.set(payment.payload.authorization.nonce, { url, settlement });
    // A v1 client sends the scheme's result as it is: the whole v1 payment. A v2 client wraps the payload itself.
    return payment.x402Version === 1 ? { ...payment, payload: { ...payment.payload } } : { x402Version: 2, payload: { ...payment.payload } };
  }

  /**
   * The seller's answer to a v2 payment of this scheme: a refusal (a 402 naming a settle failure or a verification
   * error) is PaymentNotAcceptedError, with the refund path, as X402Agent.fetch throws it. @x402/core runs this hook
   * for v2 payments only: a v1 seller's refusal comes back as its response, and the refund comes home all the same.
   */
  private async onPaymentResponse(context: PaymentResponseContext): Promise<void> {
    if (offersShieldedProof(context.paymentPayload.accepted ?? {})) return this.onShieldedPaymentResponse(context);
    return this.onEip3009PaymentResponse(context);
  }

  /**
   * The seller's answer to a shielded-proof payment: settled, the note is spent and its change saved; refused, the note
   * is held until the payment's validBefore and ShieldedPaymentRefusedError thrown, as X402Agent.fetch does.
   */
  private async onShieldedPaymentResponse({ paymentPayload, settleResponse, paymentRequired }: PaymentResponseContext): Promise<void> {
    const nullifier = (paymentPayload.payload as { nullifiers?: unknown[] }).nullifiers?.[0];
    const pending = typeof nullifier === "string" ? this.pendingShielded.get(nullifier) : undefined;
    if (pending === undefined) return;
    this.pendingShielded.delete(nullifier as string);
    if (settleResponse?.success === true) return this.shielded.confirm(pending.proven);
    this.shielded.refuse(pending.proven);
    const reason = settleResponse?.errorReason ?? paymentRequired?.error;
    throw new ShieldedPaymentRefusedError(pending.url, { status: 402, ...(reason !== undefined && { reason }) }, Number(pending.proven.payment.validBefore), isRetryableShieldedReason(reason));
  }

  private async onEip3009PaymentResponse({ paymentPayload, settleResponse, paymentRequired }: PaymentResponseContext): Promise<void> {
    const nonce = (paymentPayload.payload as { authorization?: { nonce?: unknown } }).authorization?.nonce;
    const pending = typeof nonce === "string" ? this.pending.get(nonce) : undefined;
    if (pending === undefined) return;
    this.pending.delete(nonce as string);
    if (settleResponse?.success === true) return;
    if (settleResponse === undefined && paymentRequired === undefined) return;
    const reason = settleResponse?.errorReason ?? paymentRequired?.error;
    throw paymentNotAccepted(pending.url, { status: 402, ...(reason !== undefined && { reason }) }, pending.settlement);
  }
}

/**
 * An @x402/core client's selector (`new x402Client(preferShieldedProof)`) that picks a seller's shielded-proof entry
 * when its 402 offers one (nothing moves before the seller settles, in one transaction), else the first entry.
 */
export const preferShieldedProof: SelectPaymentRequirements = (_x402Version, requirements) =>
  requirements.find((entry) => offersShieldedProof(entry)) ?? requirements[0]!;

/** A scheme that pays out of the privacy pool, for an @x402/core client (see PrivatePoolScheme). */
export function privatePoolScheme(options: PrivatePoolSchemeOptions): PrivatePoolScheme {
  return new PrivatePoolScheme(options);
}

/**
 * Registers `scheme` on `client` for its chain under both names x402 gives it: the CAIP-2 id of v2
 * (eip155:<chainId>) and, where x402 has one, the v1 slug (base, base-sepolia, ...). Returns the client.
 */
export function registerPrivatePoolScheme(client: x402Client, scheme: PrivatePoolScheme): x402Client {
  const { chainId } = scheme.network;
  client.register(caip2NetworkOf(chainId), scheme);
  const v1 = v1NetworkOf(chainId);
  if (v1 !== undefined) client.registerV1(v1, scheme);
  return client;
}

/**
 * The facilitator's USDC as an @x402/core scheme's default asset: a USD asset of 6 decimals, so that the client's spend
 * controls (its per-payment dollar cap) apply to it on top of the agent's own caps, and do not refuse it as an unknown
 * token.
 */
export function facilitatorUsdc(network: X402AgentOptions["network"]): (asset: string, caip2: string) => DefaultAsset | undefined {
  return (asset, caip2) =>
    chainIdOfNetwork(caip2) === network.chainId && asset.toLowerCase() === network.asset.toLowerCase() ? { asset, decimals: 6, symbol: "USDC" } : undefined;
}

/** The URL a v1 entry names in its `resource`. */
function v1ResourceOf(requirements: PaymentRequirements): string | undefined {
  const { resource } = requirements as { resource?: unknown };
  return typeof resource === "string" ? resource : undefined;
}

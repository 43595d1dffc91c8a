import { hexlify, randomBytes, type Signer, type TypedDataDomain } from "ethers";
import { eip3009Types } from "./eip712-domain.js";
import { chainIdOfNetwork } from "./networks.js";
import type { ShieldedPaymentPayload } from "./shielded.js";
import type {
  ExactEvmPayload,
  ExactRequirement,
  ExactRequirementV2,
  PaymentPayload,
  ResourceInfo,
} from "./schemas.js";

/** When an authorization may be used: strictly after `validAfter`, strictly before `validBefore` (unix seconds). */
export interface ValidityWindow {
  validAfter: bigint;
  validBefore: bigint;
}

/** Backdating absorbs clock skew between the payer and the chain, as the reference client does. */
const VALID_AFTER_BACKDATE_SECONDS = 600n;

/** The reference client's window: from 10 minutes before `nowSeconds` until the seller's maxTimeoutSeconds after. */
export function validityWindow(requirement: Pick<ExactRequirement, "maxTimeoutSeconds">, nowSeconds: number): ValidityWindow {
  const now = BigInt(Math.floor(nowSeconds));
  return { validAfter: now - VALID_AFTER_BACKDATE_SECONDS, validBefore: now + BigInt(requirement.maxTimeoutSeconds) };
}

/** The x402 version a seller's entry belongs to: v2 names the amount `amount`, v1 `maxAmountRequired`. */
export function x402VersionOf(requirement: ExactRequirement): 1 | 2 {
  return "amount" in requirement ? 2 : 1;
}

/** The atomic amount a seller's entry asks for, whichever version's field carries it. */
export function amountOf(requirement: ExactRequirement): string {
  // The cast: the loose objects' index signature keeps `in` from narrowing the union.
  return "amount" in requirement ? (requirement as ExactRequirementV2).amount : requirement.maxAmountRequired;
}

export interface BuildPaymentArgs {
  /** The seller's `accepts` entry, validated with ExactRequirementSchema. */
  accepted: ExactRequirement;
  /** The v2 402's `resource`; v1 payments carry none. */
  resource?: ResourceInfo;
  /** Holds the funds and signs the authorization (the SDK's probe signs with a throwaway key). */
  payer: Signer;
  window: ValidityWindow;
}

/**
 * The x402 PaymentPayload that pays `accepted` from `payer`: an EIP-3009 TransferWithAuthorization of exactly
 * the seller's amount to its payTo, signed under the token's EIP-712 domain (extra.name, extra.version) on the
 * entry's chain, with a random nonce. v1: `{x402Version:1, scheme, network, payload}`; v2: `{x402Version:2,
 * resource, accepted, payload}` with `accepted` the seller's entry unchanged.
 */
export async function buildPaymentPayload({ accepted, resource, payer, window }: BuildPaymentArgs): Promise<PaymentPayload> {
  const chainId = chainIdOfNetwork(accepted.network);
  if (chainId === undefined) throw new Error(`unknown x402 network ${accepted.network}`);
  const domain: TypedDataDomain = {
    name: accepted.extra.name,
    version: accepted.extra.version,
    chainId,
    verifyingContract: accepted.asset,
  };
  const authorization = {
    from: await payer.getAddress(),
    to: accepted.payTo,
    value: amountOf(accepted),
    validAfter: window.validAfter.toString(),
    validBefore: window.validBefore.toString(),
    nonce: hexlify(randomBytes(32)),
  };
  const signature = await payer.signTypedData(domain, eip3009Types("TransferWithAuthorization"), authorization);
  return paymentPayloadOf(accepted, resource, { signature, authorization });
}

/**
 * The x402 PaymentPayload that carries `payload` to `accepted`'s seller: v1 `{x402Version:1, scheme, network, payload}`;
 * v2 `{x402Version:2, resource, accepted, payload}` with `accepted` the seller's entry unchanged.
 */
export function paymentPayloadOf(accepted: ExactRequirement, resource: ResourceInfo | undefined, payload: ExactEvmPayload): PaymentPayload {
  if (x402VersionOf(accepted) === 1) {
    return { x402Version: 1, scheme: accepted.scheme, network: accepted.network, payload };
  }
  return {
    x402Version: 2,
    ...(resource !== undefined && { resource }),
    accepted: accepted as ExactRequirementV2,
    payload,
  };
}

/** The `xPayment` value: base64 of the payload's JSON, as both x402 versions put it in their header. */
export function encodeXPayment(payload: PaymentPayload | ShieldedPaymentPayload): string {
  return Buffer.from(JSON.stringify(payload), "utf8").toString("base64");
}

/** The payload an `xPayment` value carries (encodeXPayment's inverse); from the pinned facilitator, so not re-validated. */
export function decodeXPayment(xPayment: string): PaymentPayload {
  return JSON.parse(Buffer.from(xPayment, "base64").toString("utf8")) as PaymentPayload;
}

/** The request headers that carry `xPayment` to a seller of either version: v1 reads X-PAYMENT, v2 PAYMENT-SIGNATURE. */
export function paymentHeaders(xPayment: string): Record<"X-PAYMENT" | "PAYMENT-SIGNATURE", string> {
  return { "X-PAYMENT": xPayment, "PAYMENT-SIGNATURE": xPayment };
}

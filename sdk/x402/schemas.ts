import { isAddress } from "ethers";
import { z } from "zod";
import { Eip712DomainExtraSchema } from "./eip712-domain.js";
import { chainIdOfNetwork } from "./networks.js";

// A v2 payment must echo the seller's `accepts` entry unchanged (the reference seller deep-compares it), so
// these schemas only validate: no transforms (addresses keep their casing, amounts stay strings) and loose
// objects keep fields they do not name.

const EvmAddressSchema = z
  .string()
  .refine((s) => /^0x[0-9a-fA-F]{40}$/.test(s) && isAddress(s), { message: "must be a 0x-prefixed 20-byte address" });

/** A positive atomic token amount as a canonical decimal string. */
const AtomicAmountStringSchema = z
  .string()
  .regex(/^[1-9][0-9]{0,77}$/, "must be a positive atomic amount as a canonical integer string such as \"10000\"");

const EvmNetworkSchema = z.string().refine((network) => chainIdOfNetwork(network) !== undefined, {
  message: "must be a CAIP-2 EVM network id such as eip155:84532 or an x402 v1 network name such as base-sepolia",
});

const exactEvmRequirementFields = {
  scheme: z.literal("exact"),
  network: EvmNetworkSchema,
  asset: EvmAddressSchema,
  payTo: EvmAddressSchema,
  maxTimeoutSeconds: z.number().int().positive(),
  extra: Eip712DomainExtraSchema,
};

/** An x402 v1 `accepts` entry of the `exact` EVM scheme: the amount is `maxAmountRequired`. */
export const ExactRequirementV1Schema = z.looseObject({
  ...exactEvmRequirementFields,
  maxAmountRequired: AtomicAmountStringSchema,
});
export type ExactRequirementV1 = z.infer<typeof ExactRequirementV1Schema>;

/** An x402 v2 `accepts` entry of the `exact` EVM scheme: the amount is `amount`. */
export const ExactRequirementV2Schema = z.looseObject({
  ...exactEvmRequirementFields,
  amount: AtomicAmountStringSchema,
});
export type ExactRequirementV2 = z.infer<typeof ExactRequirementV2Schema>;

/** Either shape; which one an entry has decides the version of the payment built for it. */
export const ExactRequirementSchema = z.union([ExactRequirementV2Schema, ExactRequirementV1Schema]);
export type ExactRequirement = z.infer<typeof ExactRequirementSchema>;

/** Any seller's entry, of any scheme: a 402 may offer several, and the buyer picks the one it can pay. */
const AnyRequirementSchema = z.looseObject({ scheme: z.string(), network: z.string() });

/** What a v2 402 describes the paid resource with; a v2 payment carries it back. */
export const ResourceInfoSchema = z.looseObject({
  url: z.string().min(1),
  description: z.string().optional(),
  mimeType: z.string().optional(),
});
export type ResourceInfo = z.infer<typeof ResourceInfoSchema>;

/** A v1 402's JSON body. `error` says why an attached payment was refused. */
export const PaymentRequiredV1Schema = z.looseObject({
  x402Version: z.literal(1),
  error: z.string().optional(),
  accepts: z.array(AnyRequirementSchema).min(1),
});

/** The JSON inside a v2 402's PAYMENT-REQUIRED header. */
export const PaymentRequiredV2Schema = z.looseObject({
  x402Version: z.literal(2),
  error: z.string().optional(),
  resource: ResourceInfoSchema,
  accepts: z.array(AnyRequirementSchema).min(1),
});

export const PaymentRequiredSchema = z.discriminatedUnion("x402Version", [PaymentRequiredV1Schema, PaymentRequiredV2Schema]);
export type PaymentRequired = z.infer<typeof PaymentRequiredSchema>;

/** The `exact` EVM scheme's payload: an EIP-3009 TransferWithAuthorization and its signature. */
export interface ExactEvmPayload {
  signature: string;
  authorization: {
    from: string;
    to: string;
    /** Decimal strings, as the reference facilitator reads them with BigInt(). */
    value: string;
    validAfter: string;
    validBefore: string;
    /** Random 32 bytes, 0x-prefixed hex. */
    nonce: string;
  };
}

export interface PaymentPayloadV1 {
  x402Version: 1;
  scheme: "exact";
  network: string;
  payload: ExactEvmPayload;
}

export interface PaymentPayloadV2 {
  x402Version: 2;
  resource?: ResourceInfo;
  /** The seller's `accepts` entry, unchanged. */
  accepted: ExactRequirementV2;
  payload: ExactEvmPayload;
}

export type PaymentPayload = PaymentPayloadV1 | PaymentPayloadV2;

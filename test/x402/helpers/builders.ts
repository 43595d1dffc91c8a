import { encodePaymentRequiredHeader } from "@x402/core/http";
import { getAddress, toBeHex, zeroPadValue } from "ethers";
import type { ExactRequirementV1, ExactRequirementV2 } from "../../../sdk/x402/schemas.js";

/** Deterministic distinct addresses. */
export const addressOf = (tag: number) => getAddress(zeroPadValue(toBeHex(0x4020 + tag), 20));

export const USDC_ON_BASE_SEPOLIA = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

/** A v2 `exact` entry as the reference seller emits it, for Base Sepolia USDC. */
export function buildRequirementV2(overrides: Partial<ExactRequirementV2> = {}): ExactRequirementV2 {
  return {
    scheme: "exact",
    network: "eip155:84532",
    amount: "10000",
    asset: USDC_ON_BASE_SEPOLIA,
    payTo: addressOf(1),
    maxTimeoutSeconds: 60,
    extra: { name: "USDC", version: "2" },
    ...overrides,
  };
}

/** A v1 `exact` entry as the v1 reference middleware emitted it, for Base Sepolia USDC. */
export function buildRequirementV1(overrides: Partial<ExactRequirementV1> = {}): ExactRequirementV1 {
  return {
    scheme: "exact",
    network: "base-sepolia",
    maxAmountRequired: "10000",
    resource: "http://127.0.0.1:4021/weather",
    description: "Weather report",
    mimeType: "application/json",
    payTo: addressOf(1),
    maxTimeoutSeconds: 60,
    asset: USDC_ON_BASE_SEPOLIA,
    extra: { name: "USDC", version: "2" },
    ...overrides,
  };
}

/** A v2 PAYMENT-REQUIRED header value, encoded by the reference codec (typed for CAIP-2 networks only). */
export function paymentRequiredHeader(required: { x402Version: 2; error?: string; resource: object; accepts: object[] }): string {
  return encodePaymentRequiredHeader(required as Parameters<typeof encodePaymentRequiredHeader>[0]);
}

import { authorizationTypes } from "@x402/evm";
import { verifyTypedData, type TypedDataDomain } from "ethers";
import type { ExactEvmPayload } from "../../../sdk/x402/schemas.js";

/** Who signed a payment's authorization, by the reference package's own EIP-3009 type definition. */
export function authorizationSigner(domain: TypedDataDomain, { authorization, signature }: ExactEvmPayload): string {
  const types = { TransferWithAuthorization: authorizationTypes.TransferWithAuthorization.map((field) => ({ ...field })) };
  return verifyTypedData(domain, types, authorization, signature);
}

/** USDC's EIP-712 domain (Base Sepolia naming) at `verifyingContract` on `chainId`. */
export const usdcDomain = (chainId: number, verifyingContract: string): TypedDataDomain => ({
  name: "USDC",
  version: "2",
  chainId,
  verifyingContract,
});

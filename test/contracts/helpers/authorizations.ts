import { Signature, type Signer, type TypedDataDomain } from "ethers";
import type { TestUSDC } from "../../../types/ethers-contracts/index.js";
import { eip3009Types, type Eip3009Authorization } from "../../../sdk/x402/eip712-domain.js";

/** The fields of an EIP-3009 TransferWithAuthorization / ReceiveWithAuthorization. */
export interface Authorization {
  from: string;
  to: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: string;
}

export type { Eip3009Authorization as AuthorizationKind } from "../../../sdk/x402/eip712-domain.js";

const CANCEL_AUTHORIZATION_TYPES = {
  CancelAuthorization: [
    { name: "authorizer", type: "address" },
    { name: "nonce", type: "bytes32" },
  ],
};

/** The token's EIP-712 domain, read from the token as an x402 facilitator would. */
export async function domainOf(usdc: TestUSDC): Promise<TypedDataDomain> {
  const provider = usdc.runner?.provider;
  if (!provider) throw new Error("the token contract has no provider");
  return {
    name: await usdc.name(),
    version: await usdc.version(),
    chainId: (await provider.getNetwork()).chainId,
    verifyingContract: await usdc.getAddress(),
  };
}

/** An authorization valid for the next hour from `now`, with `overrides` applied. */
export function buildAuthorization(
  now: number,
  base: Pick<Authorization, "from" | "to" | "value" | "nonce">,
  overrides: Partial<Authorization> = {},
): Authorization {
  return { validAfter: 0n, validBefore: BigInt(now + 3600), ...base, ...overrides };
}

export async function signAuthorization(
  signer: Signer,
  usdc: TestUSDC,
  kind: Eip3009Authorization,
  authorization: Authorization,
): Promise<string> {
  return signer.signTypedData(await domainOf(usdc), eip3009Types(kind), authorization);
}

export async function signCancellation(signer: Signer, usdc: TestUSDC, nonce: string): Promise<string> {
  const authorizer = await signer.getAddress();
  return signer.signTypedData(await domainOf(usdc), CANCEL_AUTHORIZATION_TYPES, { authorizer, nonce });
}

/** A 65-byte signature as the (v, r, s) arguments of the non-bytes overloads. */
export function splitSignature(signature: string): [number, string, string] {
  const { v, r, s } = Signature.from(signature);
  return [v, r, s];
}

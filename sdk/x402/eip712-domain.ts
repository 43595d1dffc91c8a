import type { TypedDataField } from "ethers";
import { z } from "zod";

/** The two EIP-3009 authorizations that move tokens; they sign the same fields under different type names. */
export type Eip3009Authorization = "TransferWithAuthorization" | "ReceiveWithAuthorization";

/** EIP-3009's typed data, field for field as the token (and `authorizationTypes` of `@x402/evm`) hashes it. */
export function eip3009Types(kind: Eip3009Authorization): Record<string, TypedDataField[]> {
  return {
    [kind]: [
      { name: "from", type: "address" },
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" },
      { name: "validBefore", type: "uint256" },
      { name: "nonce", type: "bytes32" },
    ],
  };
}

/**
 * A seller's `extra` as the token's EIP-712 domain, which the payer signs under (USDC: name "USDC" on Base
 * Sepolia, version "2"). Other fields are kept: a v2 payment echoes the entry.
 */
export const Eip712DomainExtraSchema = z.looseObject({ name: z.string().min(1), version: z.string().min(1) });

/** The token's EIP-712 domain name and version. */
export interface TokenDomainNames {
  name: string;
  version: string;
}

/** The domain a seller's entry names in `extra`; undefined when it names none (no `extra`, or no name or version). */
export function domainNamedBy(entry: { extra?: unknown }): TokenDomainNames | undefined {
  const parsed = Eip712DomainExtraSchema.safeParse(entry.extra);
  return parsed.success ? { name: parsed.data.name, version: parsed.data.version } : undefined;
}

/**
 * The one rule for an entry that names no EIP-712 domain, the SDK's and the relayer's: it is not paid. The v2
 * reference facilitator refuses such a payment (invalid_exact_evm_missing_eip712_domain); the x402 1.x one
 * substitutes a name from its own table of chains, which a buyer cannot see. Either way the verdict comes after
 * the payer is funded.
 */
export function missingDomainMessage(entry: { asset: string }): string {
  return (
    `The seller's entry names no EIP-712 domain for asset ${entry.asset} (extra.name and extra.version are missing): ` +
    "its facilitator would refuse or guess the domain only after the payment is funded, so it is not paid. " +
    "Ask the seller to add the token's domain to extra."
  );
}

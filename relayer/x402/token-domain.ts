import { TypedDataEncoder } from "ethers";
import { TestUSDC__factory } from "../../types/ethers-contracts/index.js";
import type { TokenDomainNames } from "../../sdk/x402/index.js";
import type { PoolChain } from "../chain/pool-chain.js";
import { RelayerError } from "../errors.js";

/** The pool token's EIP-712 domain as the token itself hashes it. */
export interface TokenDomain extends TokenDomainNames {
  /** The token's DOMAIN_SEPARATOR(): what transferWithAuthorization recovers signatures against. */
  separator: string;
}

/**
 * Reads the pool token's EIP-712 domain from the chain once and keeps it: the name and version (EIP-5267
 * eip712Domain() where the token has it, else name() and version() as Circle's USDC) and its DOMAIN_SEPARATOR(). A
 * token without code, or whose separator is not the standard one of its name, version, chain and address, pays
 * no x402 seller: the seller's facilitator verifies under exactly that domain. A failed read is not kept.
 */
export class TokenDomainReader {
  private domain?: Promise<TokenDomain>;

  constructor(private readonly chain: PoolChain) {}

  read(): Promise<TokenDomain> {
    this.domain ??= this.fetch().catch((error: unknown) => {
      this.domain = undefined;
      throw error;
    });
    return this.domain;
  }

  private async fetch(): Promise<TokenDomain> {
    const { chain } = this;
    const { usdc: asset, chainId } = chain.deployment;
    const code = await chain.call(() => chain.provider.getCode(asset));
    if (code === "0x") {
      throw new RelayerError("INVALID_REQUEST", `The asset ${asset} has no code on ${chain.network}: no authorization from it can execute. Nothing was spent.`);
    }
    const token = TestUSDC__factory.connect(asset, chain.provider);
    const { name, version } = await chain.call(() => token.eip712Domain()).then(
      (domain) => ({ name: domain.name, version: domain.version }),
      async () => ({ name: await chain.call(() => token.name()), version: await chain.call(() => token.version()) }),
    );
    const separator = await chain.call(() => token.DOMAIN_SEPARATOR());
    const standard = TypedDataEncoder.hashDomain({ name, version, chainId, verifyingContract: asset });
    if (separator !== standard) {
      throw new RelayerError(
        "INVALID_REQUEST",
        `The asset ${asset} signs under a domain separator ${separator} that is not the EIP-712 domain of its name "${name}", version "${version}" on chain ${chainId} (${standard}): x402 facilitators verify under the latter. Nothing was spent.`,
      );
    }
    return { name, version, separator };
  }
}

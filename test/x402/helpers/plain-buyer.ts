import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { Wallet } from "ethers";
import { privateKeyToAccount } from "viem/accounts";
import type { TestUSDC } from "../../../types/ethers-contracts/index.js";
import type { PaymentWorld } from "./payment-world.js";

/** A chain's USDC as a buyer needs it: its chain id, address, and the TestUSDC contract connected to an account that mints it. */
export interface MintableUsdc {
  chainId: number;
  asset: string;
  usdc: TestUSDC;
}

/**
 * A buyer that knows nothing of the pool: a fresh account holding `amount` of the chain's USDC, paying through
 * @x402/fetch with the reference EVM client scheme (EIP-3009), which pays the first entry it can sign.
 */
export async function plainBuyerOn({ chainId, asset, usdc }: MintableUsdc, amount: bigint) {
  const buyer = Wallet.createRandom();
  await (await usdc.mint(buyer.address, amount)).wait();
  const client = registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(buyer.privateKey as `0x${string}`) });
  // The local chain's USDC is no default asset of the reference client: the buyer allows it, as one does a new token.
  client.setSpendControls({ allowedAssets: [{ network: `eip155:${chainId}`, asset }] });
  return { address: buyer.address, fetch: wrapFetchWithPayment(fetch, client) };
}

/** plainBuyerOn the payment world's chain. */
export const plainBuyer = (world: PaymentWorld, amount: bigint) => plainBuyerOn({ chainId: world.chainId, asset: world.asset, usdc: world.chain.facilitator.usdc }, amount);

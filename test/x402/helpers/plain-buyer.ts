import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { Wallet } from "ethers";
import { privateKeyToAccount } from "viem/accounts";
import type { PaymentWorld } from "./payment-world.js";

/**
 * A buyer that knows nothing of the pool: a fresh account holding `amount` of the world's USDC, paying through
 * @x402/fetch with the reference EVM client scheme (EIP-3009), which pays the first entry it can sign.
 */
export async function plainBuyer(world: PaymentWorld, amount: bigint) {
  const buyer = Wallet.createRandom();
  await (await world.chain.facilitator.usdc.mint(buyer.address, amount)).wait();
  const client = registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(buyer.privateKey as `0x${string}`) });
  // The local chain's USDC is no default asset of the reference client: the buyer allows it, as one does a new token.
  client.setSpendControls({ allowedAssets: [{ network: `eip155:${world.chainId}`, asset: world.asset }] });
  return { address: buyer.address, fetch: wrapFetchWithPayment(fetch, client) };
}

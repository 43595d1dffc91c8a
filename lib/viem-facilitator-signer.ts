import { toFacilitatorEvmSigner, type FacilitatorEvmSigner } from "@x402/evm";
import { createWalletClient, defineChain, http, publicActions } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { caip2NetworkOf } from "../sdk/x402/networks.js";

/** Base's block time, which viem's own chain definition of Base carries: viem polls for a receipt every half of it. */
const BASE_BLOCK_TIME_MS = 2_000;

/**
 * The signer of @x402/evm's `exact` facilitator scheme over a viem wallet client of `account`, wired as the reference
 * facilitator example wires it: it submits the EIP-3009 transferWithAuthorization of a plain payment and pays its gas.
 * It looks for a settlement's receipt every `receiptPollMs`; by default as viem does on Base (every second), where a
 * chain defined without a block time would wait 4 s between looks.
 */
export function viemFacilitatorSigner(account: PrivateKeyAccount, chain: { rpcUrl: string; chainId: number; receiptPollMs?: number }): FacilitatorEvmSigner {
  // Any chain id: viem needs a chain definition to sign transactions, and x402 v2 reads the id from CAIP-2.
  const definition = defineChain({
    id: chain.chainId,
    name: caip2NetworkOf(chain.chainId),
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [chain.rpcUrl] } },
    blockTime: BASE_BLOCK_TIME_MS,
  });
  const client = createWalletClient({ account, chain: definition, transport: http(chain.rpcUrl), pollingInterval: chain.receiptPollMs }).extend(publicActions);
  // The reference signer interface types ABIs and typed data loosely; viem's generics cannot check them anyway.
  type Loose<F extends (...args: never[]) => unknown> = Parameters<F>[0];
  return toFacilitatorEvmSigner({
    address: account.address,
    getCode: (args) => client.getCode(args),
    readContract: (args) => client.readContract({ ...args, args: args.args ?? [] } as Loose<typeof client.readContract>),
    verifyTypedData: (args) => client.verifyTypedData(args as Loose<typeof client.verifyTypedData>),
    writeContract: (args) => client.writeContract(args as Loose<typeof client.writeContract>),
    sendTransaction: (args) => client.sendTransaction(args),
    waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
  });
}

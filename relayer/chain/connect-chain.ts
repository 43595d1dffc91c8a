import { FetchRequest, JsonRpcProvider } from "ethers";
import { resolveAddressBook, type AddressBook } from "../../lib/address-book.js";
import { RELAYER_ENV, type RelayerConfig } from "../config.js";
import { PoolChain } from "./pool-chain.js";

/** The chain behind the RPC URL and its deployment from the address book, with the relaying party's key. */
export async function connectPoolChain(
  config: Pick<RelayerConfig, "rpcUrl" | "relayerPrivateKey" | "addressBook" | "rpcTimeoutMs"> &
    Partial<Pick<RelayerConfig, "relayBatch" | "relayBatchMax" | "relayInclusionTimeoutMs">>,
): Promise<{ chain: PoolChain; book: AddressBook }> {
  const request = new FetchRequest(config.rpcUrl);
  request.timeout = config.rpcTimeoutMs;
  const probe = new JsonRpcProvider(request);
  const chainId = await probe.getNetwork().then(
    (network) => Number(network.chainId),
    (error: unknown) => {
      throw new Error(`cannot reach the chain at ${RELAYER_ENV.rpcUrl}: ${(error as Error).message}`);
    },
  ).finally(() => probe.destroy());
  const book = await resolveAddressBook(chainId, config.addressBook, RELAYER_ENV.addressBook);
  const chain = PoolChain.connect(
    config.rpcUrl,
    config.relayerPrivateKey,
    { chainId, entrypoint: book.entrypoint, privacyPool: book.privacyPool, usdc: book.usdc, scope: book.scope },
    config.rpcTimeoutMs,
    config.relayBatch ? (config.relayBatchMax ?? 1) : 1,
    config.relayInclusionTimeoutMs,
  );
  return { chain, book };
}

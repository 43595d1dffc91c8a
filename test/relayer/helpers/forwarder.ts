import type { Signer, TransactionResponse } from "ethers";
import { Forwarder__factory, type Forwarder } from "../../../types/ethers-contracts/index.js";

/** A test-only Forwarder (contracts/test/Forwarder.sol): calls other contracts in one transaction, as any contract may. */
export async function deployForwarder(deployer: Signer): Promise<Forwarder> {
  const forwarder = await new Forwarder__factory(deployer).deploy();
  await forwarder.waitForDeployment();
  return forwarder;
}

/**
 * What a stranger watching the mempool does to the relayer's pending transaction `pending`: sends its calldata (or
 * `data`, say one withdrawal of a batch as a relay of its own) to the same contract through `forwarder` (so the
 * transaction calls no entrypoint) at twice its tip, mined first.
 */
export async function forwardAhead(forwarder: Forwarder, sender: Signer, pending: TransactionResponse, data = pending.data): Promise<TransactionResponse> {
  return forwarder.connect(sender).forward([pending.to!], [data], {
    gasLimit: pending.gasLimit + 100_000n,
    maxFeePerGas: pending.maxFeePerGas! * 2n,
    maxPriorityFeePerGas: pending.maxPriorityFeePerGas! * 2n + 1n,
  });
}

// Places our test peers of x402's batch-settlement contracts (contracts/x402-peers/) where @x402/evm expects them, on
// a local chain: deployed anywhere, then their runtime code set at the canonical address. Their constructors write no
// storage and their EIP-712 domain reads address(this), so the code alone makes them work there.
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from "@x402/evm";
import type { HardhatEthers } from "@nomicfoundation/hardhat-ethers/types";
import type { ERC3009DepositCollector, Multicall3, X402BatchSettlement } from "../types/ethers-contracts/index.js";

/** Where @x402/evm's batch-settlement reads channel state in one call (not exported by the package). */
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11";

export interface BatchSettlementPeer {
  settlement: X402BatchSettlement;
  collector: ERC3009DepositCollector;
  multicall: Multicall3;
}

export async function placeBatchSettlementPeer(ethers: HardhatEthers): Promise<BatchSettlementPeer> {
  const setCodeOf = async (name: string, address: string) => {
    // Mined before its code is read: on a chain that mines at intervals, the deployment is still pending here.
    const deployed = await (await ethers.deployContract(name)).waitForDeployment();
    await ethers.provider.send("hardhat_setCode", [address, await ethers.provider.getCode(await deployed.getAddress())]);
  };
  await setCodeOf("X402BatchSettlement", BATCH_SETTLEMENT_ADDRESS);
  await setCodeOf("ERC3009DepositCollector", ERC3009_DEPOSIT_COLLECTOR_ADDRESS);
  await setCodeOf("Multicall3", MULTICALL3_ADDRESS);
  return {
    settlement: await ethers.getContractAt("X402BatchSettlement", BATCH_SETTLEMENT_ADDRESS),
    collector: await ethers.getContractAt("ERC3009DepositCollector", ERC3009_DEPOSIT_COLLECTOR_ADDRESS),
    multicall: await ethers.getContractAt("Multicall3", MULTICALL3_ADDRESS),
  };
}

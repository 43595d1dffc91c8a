import type { NetworkConnection } from "hardhat/types/network";
import { deployFacilitator } from "../../../scripts/deploy/deploy-facilitator.js";

/**
 * The facilitator as the deploy script deploys it on a chain without Circle's USDC, plus the accounts the tests
 * play (the deployer is admin and postman; depositors and payees are distinct accounts) and the single-proof
 * verifier the pool inlines, on its own (WithdrawalVerifierHarness).
 */
export async function deployedFacilitator(connection: NetworkConnection) {
  const { ethers } = connection;
  const deployment = await deployFacilitator(connection);
  const usdc = await ethers.getContractAt("TestUSDC", deployment.addressBook.usdc);
  const verifier = await ethers.deployContract("WithdrawalVerifierHarness");
  const [admin, depositor, otherDepositor, recipient, feeRecipient, stranger] = await ethers.getSigners();
  if (!admin || !depositor || !otherDepositor || !recipient || !feeRecipient || !stranger) {
    throw new Error("the test network needs at least 6 accounts");
  }
  return {
    ...deployment,
    usdc,
    verifier,
    scope: deployment.addressBook.scope,
    accounts: { admin, postman: admin, depositor, otherDepositor, recipient, feeRecipient, stranger },
  };
}

export type DeployedFacilitator = Awaited<ReturnType<typeof deployedFacilitator>>;

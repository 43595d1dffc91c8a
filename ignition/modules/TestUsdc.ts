import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";

/** TestUSDC for chains without Circle's USDC (the local dev chain); the deployer may mint. */
export default buildModule("TestUsdc", (m) => {
  const usdc = m.contract("TestUSDC", [m.getAccount(0)]);
  return { usdc };
});

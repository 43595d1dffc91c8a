import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";

/** Smallest deposit: 1 USDC (docs/api.md section 8). */
export const DEFAULT_MINIMUM_DEPOSIT_AMOUNT = 1_000_000n;
/** Highest relay fee: the per-settle take of the paid tiers, 500 bps (docs/api.md section 8). */
export const DEFAULT_MAX_RELAY_FEE_BPS = 500n;

/**
 * The facilitator's contracts for an existing USDC: the Poseidon libraries the pool links, the generated batch
 * verifier (the single-proof verifier is inlined into the pool), the Entrypoint (deployer = admin) and the USDC
 * PrivacyPool, registered with the Entrypoint.
 *
 * Parameters: `usdc` (required), `postman` (default: the deployer), `minimumDepositAmount`, `maxRelayFeeBPS`,
 * and `accessFeeTreasury` (receives Entrypoint.payAccessFee payments; default: the deployer). The relaying keys need
 * no role: every relay, and every return of what a payment left unused, is a call anyone may make.
 */
export default buildModule("Facilitator", (m) => {
  const deployer = m.getAccount(0);
  const usdc = m.getParameter<string>("usdc");
  const postman = m.getParameter("postman", deployer);
  const minimumDepositAmount = m.getParameter("minimumDepositAmount", DEFAULT_MINIMUM_DEPOSIT_AMOUNT);
  const maxRelayFeeBPS = m.getParameter("maxRelayFeeBPS", DEFAULT_MAX_RELAY_FEE_BPS);
  const accessFeeTreasury = m.getParameter("accessFeeTreasury", deployer);

  const poseidonT2 = m.library("PoseidonT2");
  const poseidonT3 = m.library("PoseidonT3");
  const poseidonT4 = m.library("PoseidonT4");
  const batchVerifier = m.contract("WithdrawalBatchVerifier");
  const entrypoint = m.contract("Entrypoint", [deployer, postman]);
  const privacyPool = m.contract("PrivacyPool", [entrypoint, batchVerifier, usdc], {
    libraries: { PoseidonT2: poseidonT2, PoseidonT3: poseidonT3, PoseidonT4: poseidonT4 },
  });
  m.call(entrypoint, "registerPool", [usdc, privacyPool, minimumDepositAmount, maxRelayFeeBPS]);
  m.call(entrypoint, "setAccessFeeTreasury", [accessFeeTreasury]);

  return { entrypoint, privacyPool, batchVerifier, poseidonT2, poseidonT3, poseidonT4 };
});

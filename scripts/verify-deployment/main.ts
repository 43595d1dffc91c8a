// Checks a deployment from the chain alone against this checkout: bytecode (with this checkout's key inlined, its
// files in agreement), immutables and linked libraries, USDC, the pool's registration and fees, who holds each role
// and who ever held one, read from the entrypoint's creation block (found on chain). Prints a table
// and exits non-zero on any mismatch (docs/operations.md, "Checking a deployment").
//
//   RPC_URL=https://sepolia.base.org npm run verify:deployment
//
// Env (scripts/verify-deployment/config.ts): RPC_URL (default http://127.0.0.1:8545), ADDRESS_BOOK (default
// deployments/<chainId>.json), ROLE_HOLDERS (`POSTMAN_ROLE=0xA,0xB;DEFAULT_ADMIN_ROLE=0xC`: holders that replace the
// address book's for those roles, after a rotation), PAST_ROLE_HOLDERS (same form: earlier holders the history check
// accepts, such as a rotated-out key), MAX_BLOCK_RANGE (blocks per eth_getLogs, default 2000), PHASE1_PTAU (the public
// phase-1 file the key was made from: on a production chain the key passes only with it, scripts/circuits/key-trust.ts).
import { JsonRpcProvider } from "ethers";
import hre from "hardhat";
import { releaseProverThreads } from "../../sdk/circuit/prover.js";
import { resolveAddressBook } from "../../lib/address-book.js";
import { ConfigError } from "../../lib/env-config.js";
import { loadVerifyDeploymentConfig, VERIFY_DEPLOYMENT_ENV } from "./config.js";
import { formatChecks } from "./deployment-check.js";
import { verifyDeployment } from "./verify-deployment.js";

async function main(): Promise<void> {
  const config = loadVerifyDeploymentConfig(process.env);
  const provider = new JsonRpcProvider(config.rpcUrl, undefined, { staticNetwork: true });
  try {
    const chainId = Number((await provider.getNetwork()).chainId);
    const book = await resolveAddressBook(chainId, config.addressBook, VERIFY_DEPLOYMENT_ENV.addressBook);
    console.log(`verifying the deployment of chain ${chainId} (entrypoint ${book.entrypoint}, pool ${book.privacyPool}) against this checkout`);
    const checks = await verifyDeployment({ provider, book, artifacts: hre.artifacts, roleHolders: config.roleHolders, pastRoleHolders: config.pastRoleHolders, maxBlockRange: config.maxBlockRange, progress: console.log, phase1File: config.phase1File });
    console.log(formatChecks(checks));
    const mismatches = checks.filter((check) => !check.ok);
    console.log(mismatches.length === 0 ? `all ${checks.length} checks pass` : `${mismatches.length} of ${checks.length} checks do not match: ${mismatches.map((check) => check.check).join("; ")}`);
    process.exitCode = mismatches.length === 0 ? 0 : 1;
  } finally {
    provider.destroy();
    // Reading the zkey started snarkjs' curve threads; without this the process never exits.
    await releaseProverThreads();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exitCode = 1;
});

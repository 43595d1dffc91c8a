// Deploys the facilitator's contracts to the chain at RPC_URL (any host, port and chain id) and writes
// deployments/<chainId>.json.
//
//   Local node:             npm run chain:local                    then  npm run deploy:local
//   Another node:           RPC_URL=http://127.0.0.1:9545 npm run deploy:local
//   Fork of Base (Sepolia): FORK_URL=<rpc> npm run chain:fork      then  npm run deploy:local
//   Base Sepolia:           RPC_URL=<rpc> DEPLOYER_PRIVATE_KEY=0x... npm run deploy:local
//
// Circle's USDC is used where it has code on the chain, TestUSDC is deployed elsewhere, never on a production chain
// (Base): there a chain without Circle's USDC stops the deploy. Env (scripts/deploy/
// deploy-config.ts): RPC_URL (default http://127.0.0.1:8545), DEPLOYER_PRIVATE_KEY (default: the node's first
// account), DEPLOYMENTS_DIR, DEPLOYMENT_ID, and POSTMAN_ADDRESS (publishes ASP roots) and ACCESS_FEE_TREASURY
// (receives Entrypoint.payAccessFee, the relayer's TREASURY_ADDRESS), each defaulting to the deployer.
//
// On a production chain (Base) it refuses a proving key without a public phase 1, three contributions, a beacon and
// a transcript that chains to the committed zkey, or whose verifiers are not derived from it (scripts/circuits/
// key-trust.ts; docs/trusted-setup.md), unless ALLOW_UNTRUSTED_KEY=1; elsewhere it says what the key is.
import path from "node:path";
import hre from "hardhat";
import { releaseProverThreads } from "../../sdk/circuit/prover.js";
import { ConfigError } from "../../lib/env-config.js";
import { readAddressBook, writeAddressBook } from "../../lib/address-book.js";
import { assessProvingKey } from "../circuits/key-trust.js";
import { isLoopbackRpc, loadDeployConfig } from "./deploy-config.js";
import { deployFacilitator } from "./deploy-facilitator.js";
import { MissingUsdcError } from "./usdc.js";
import { judgeProvingKey } from "./key-guard.js";
import { discardStaleJournal } from "./stale-journal.js";

const log = (line: string) => console.log(`[deploy] ${line}`);

async function main(): Promise<void> {
  const config = loadDeployConfig(process.env);
  const connection = await hre.network.create({
    network: "localhost",
    override: { url: config.rpcUrl, ...(config.deployerPrivateKey !== undefined && { accounts: [config.deployerPrivateKey] }) },
  });
  try {
    const { provider } = connection.ethers;
    const chainId = Number((await provider.getNetwork()).chainId);
    log(`RPC ${new URL(config.rpcUrl).origin}, chain ${chainId}`);

    log(`checking the proving key: its zkey, transcript, both verifiers, and its phase 1 by its own alpha and beta${config.phase1File === undefined ? "" : ` against ${config.phase1File}`}`);
    const assessment = await assessProvingKey(undefined, { publicPhase1File: config.phase1File });
    const verdict = judgeProvingKey(assessment, chainId, { allowUntrustedKey: config.allowUntrustedKey });
    for (const line of verdict.lines) (verdict.deploy ? log : (text: string) => console.error(`[deploy] ${text}`))(line);
    if (!verdict.deploy) {
      process.exitCode = 1;
      return;
    }

    const local = isLoopbackRpc(config.rpcUrl);
    if (config.deploymentId === undefined && (await discardStaleJournal(hre.config.paths.ignition, provider, chainId, local))) {
      log("discarded the Ignition journal of an earlier run of this local chain");
    }
    const { addressBook } = await deployFacilitator(connection, {
      postman: config.postman,
      accessFeeTreasury: config.accessFeeTreasury,
      deploymentId: config.deploymentId,
      displayUi: true,
      log,
    });

    // A rerun that found everything deployed must not move the start past the original deployment.
    const previous = await readAddressBook(chainId, config.deploymentsDir);
    const startBlock =
      previous?.privacyPool === addressBook.privacyPool ? Math.min(previous.startBlock, addressBook.startBlock) : addressBook.startBlock;
    const file = await writeAddressBook({ ...addressBook, startBlock }, config.deploymentsDir);
    log(`address book written to ${path.relative(process.cwd(), file)}`);
  } finally {
    await connection.close();
    // Reading the zkey started snarkjs' curve threads; without this the process never exits.
    await releaseProverThreads();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError || error instanceof MissingUsdcError ? error.message : error);
  process.exitCode = 1;
});

import type { NetworkConnection } from "hardhat/types/network";
import FacilitatorModule from "../../ignition/modules/Facilitator.js";
import TestUsdcModule from "../../ignition/modules/TestUsdc.js";
import type { Entrypoint, PrivacyPool } from "../../types/ethers-contracts/index.js";
import { AddressBookSchema, type AddressBook } from "../../lib/address-book.js";
import { isProductionChain } from "./key-guard.js";
import { CIRCLE_USDC, findCircleUsdc, MissingUsdcError } from "./usdc.js";

export interface DeployFacilitatorOptions {
  /** Receives POSTMAN_ROLE (publishes ASP roots); default: the deployer. */
  postman?: string;
  /** Receives Entrypoint.payAccessFee payments (the relayer's TREASURY_ADDRESS); default: the deployer. */
  accessFeeTreasury?: string;
  /** Default: 1 USDC. */
  minimumDepositAmount?: bigint;
  /** Default: 500 bps. */
  maxRelayFeeBPS?: bigint;
  /** Show Ignition's per-transaction progress. */
  displayUi?: boolean;
  /** Ignition deployment id, whose journal a rerun resumes; default: Ignition's per-chain id. */
  deploymentId?: string;
  /** Receives one line per deployment step. */
  log?: (line: string) => void;
}

export interface FacilitatorDeployment {
  entrypoint: Entrypoint;
  privacyPool: PrivacyPool;
  addressBook: AddressBook;
}

/**
 * Deploys the facilitator's contracts with Hardhat Ignition on the connected chain: Circle's USDC where the chain
 * has it (Base, Base Sepolia, a local fork of either), a fresh TestUSDC elsewhere but never on a production chain
 * (MissingUsdcError, before any transaction). Idempotent on chains whose
 * Ignition journal persists: a rerun finishes an interrupted deployment or returns the existing one.
 * The same function is the contract tests' fixture.
 */
export async function deployFacilitator(
  connection: NetworkConnection,
  options: DeployFacilitatorOptions = {},
): Promise<FacilitatorDeployment> {
  const { ethers, ignition } = connection;
  const log = options.log ?? (() => {});
  const ignitionOptions = { displayUi: options.displayUi ?? false, deploymentId: options.deploymentId };
  const [deployer] = await ethers.getSigners();
  if (deployer === undefined) throw new Error(`network ${connection.networkName} has no deployer account`);
  const chainId = Number((await ethers.provider.getNetwork()).chainId);
  const startBlock = await ethers.provider.getBlockNumber();
  const postman = options.postman ?? deployer.address;

  let usdc = await findCircleUsdc(ethers.provider, chainId);
  // On a production chain only its own Circle USDC will do: no TestUSDC, no other chain's address.
  if (isProductionChain(chainId) && usdc !== CIRCLE_USDC[chainId]) throw new MissingUsdcError(chainId);
  if (usdc !== undefined) {
    log(`USDC: Circle's USDC at ${usdc}`);
  } else {
    log("USDC: Circle's USDC is not on this chain, using TestUSDC");
    const { usdc: testUsdc } = await ignition.deploy(TestUsdcModule, ignitionOptions);
    usdc = await testUsdc.getAddress();
    log(`USDC: TestUSDC at ${usdc}`);
  }

  log("Deploying Poseidon libraries, the batch verifier, Entrypoint and PrivacyPool, then registering the pool");
  const deployed = await ignition.deploy(FacilitatorModule, {
    ...ignitionOptions,
    parameters: {
      Facilitator: {
        usdc,
        postman,
        ...(options.minimumDepositAmount !== undefined && { minimumDepositAmount: options.minimumDepositAmount }),
        ...(options.maxRelayFeeBPS !== undefined && { maxRelayFeeBPS: options.maxRelayFeeBPS }),
        ...(options.accessFeeTreasury !== undefined && { accessFeeTreasury: options.accessFeeTreasury }),
      },
    },
  });

  const entrypoint = await ethers.getContractAt("Entrypoint", await deployed.entrypoint.getAddress());
  const privacyPool = await ethers.getContractAt("PrivacyPool", await deployed.privacyPool.getAddress());
  const addressBook = AddressBookSchema.parse({
    chainId,
    entrypoint: await entrypoint.getAddress(),
    privacyPool: await privacyPool.getAddress(),
    usdc,
    batchVerifier: await deployed.batchVerifier.getAddress(),
    poseidon: {
      PoseidonT2: await deployed.poseidonT2.getAddress(),
      PoseidonT3: await deployed.poseidonT3.getAddress(),
      PoseidonT4: await deployed.poseidonT4.getAddress(),
    },
    scope: (await privacyPool.SCOPE()).toString(),
    startBlock,
    deployer: deployer.address,
    postman,
    // What the Ignition module defaults it to; verify:deployment checks the chain against it.
    accessFeeTreasury: options.accessFeeTreasury ?? deployer.address,
  });
  log(`Entrypoint ${addressBook.entrypoint}, PrivacyPool ${addressBook.privacyPool} (scope ${addressBook.scope})`);
  return { entrypoint, privacyPool, addressBook };
}

// Deploys the facilitator's contracts to the network named by --network and writes deployments/<chainId>.json.
//
//   Embedded local chain:   npm run chain:local                    then  npm run deploy:local
//   Fork of Base (Sepolia): FORK_URL=<rpc> npm run chain:fork      then  npm run deploy:local
//   Base Sepolia:           npm run deploy:base-sepolia
//                           (BASE_SEPOLIA_RPC_URL and DEPLOYER_PRIVATE_KEY from env or `hardhat keystore set`)
//
// Env (each defaults to the deployer): POSTMAN_ADDRESS, the account that publishes ASP roots; ACCESS_FEE_TREASURY,
// where Entrypoint.payAccessFee sends access fees (the relayer's TREASURY_ADDRESS); REFUNDER_ADDRESS, the relaying
// key that deposits the payer sweep's refunds.
import path from "node:path";
import hre from "hardhat";
import { AddressSchema } from "../../sdk/schema/primitives.js";
import { readAddressBook, writeAddressBook } from "./address-book.js";
import { deployFacilitator } from "./deploy-facilitator.js";
import { discardStaleJournal } from "./stale-journal.js";

const log = (line: string) => console.log(`[deploy] ${line}`);

const optionalAddress = (variable: string) => AddressSchema.optional().parse(process.env[variable] || undefined);
const postman = optionalAddress("POSTMAN_ADDRESS");
const accessFeeTreasury = optionalAddress("ACCESS_FEE_TREASURY");
const refunder = optionalAddress("REFUNDER_ADDRESS");
const connection = await hre.network.create();
const { provider } = connection.ethers;
const chainId = Number((await provider.getNetwork()).chainId);
log(`network ${connection.networkName}, chain ${chainId}`);

if (await discardStaleJournal(hre.config.paths.ignition, provider, chainId)) {
  log("discarded the Ignition journal of an earlier run of this local chain");
}
const { addressBook } = await deployFacilitator(connection, { postman, accessFeeTreasury, refunder, displayUi: true, log });

// A rerun that found everything deployed must not move the start past the original deployment.
const previous = await readAddressBook(chainId);
const startBlock =
  previous?.privacyPool === addressBook.privacyPool
    ? Math.min(previous.startBlock, addressBook.startBlock)
    : addressBook.startBlock;
const file = await writeAddressBook({ ...addressBook, startBlock });
log(`address book written to ${path.relative(process.cwd(), file)}`);

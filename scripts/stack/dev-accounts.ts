import { HDNodeWallet } from "ethers";

/** Hardhat's public development accounts: funded on every hardhat node, plain or forked. Never use them elsewhere. */
const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
export const devAccount = (index: number) => HDNodeWallet.fromPhrase(HARDHAT_MNEMONIC, undefined, `m/44'/60'/0'/0/${index}`);

/** Which development account plays which part on a local chain. */
export const DEV_ROLES = { deployer: 0, postman: 7, relayer: 14, treasury: 15, sellerEip3009: 16, sellerRelay: 18, sellerFacilitator: 19 } as const;

/** The chain id of a hardhat node, plain or forked: the one chain with development accounts. */
export const LOCAL_CHAIN_ID = 31337;

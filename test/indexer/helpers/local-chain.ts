import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HDNodeWallet } from "ethers";
import { network } from "hardhat";
import { writeAddressBook } from "../../../lib/address-book.js";
import { deployedFacilitator } from "../../contracts/helpers/fixtures.js";
import { serveJsonRpc, type JsonRpcBridge } from "./json-rpc-bridge.js";

/** Hardhat's default accounts come from this mnemonic; the postman's key is derived from it. */
const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
const POSTMAN_ACCOUNT = 7;

/**
 * The facilitator deployed by the real deploy code on an in-process Hardhat network, served over HTTP JSON-RPC
 * for the indexer. A dedicated postman account holds POSTMAN_ROLE, so the curator's transactions never race the
 * test's own. `reset()` returns the chain to just after the deployment. With `wallClockBlocks`, blocks mined within one second share
 * its timestamp instead of each taking the next second, so bursts of transactions never put the chain's clock ahead of
 * the wall clock (Base's block time stays at the wall clock; a bench that times payment windows needs the same).
 */
export async function startLocalChain(options: { wallClockBlocks?: boolean } = {}) {
  const connection = await network.create(options.wallClockBlocks === true ? { override: { allowBlocksWithSameTimestamp: true } } : undefined);
  const facilitator = await deployedFacilitator(connection);
  const signers = await connection.ethers.getSigners();
  const postman = HDNodeWallet.fromPhrase(HARDHAT_MNEMONIC, undefined, `m/44'/60'/0'/0/${POSTMAN_ACCOUNT}`);
  if (signers[POSTMAN_ACCOUNT]?.address !== postman.address) throw new Error("unexpected Hardhat accounts");
  const { entrypoint } = facilitator;
  await (await entrypoint.grantRole(await entrypoint.POSTMAN_ROLE(), postman.address)).wait();

  const [alice, bob, carol, dave, erin] = signers.slice(8, 13);
  if (!alice || !bob || !carol || !dave || !erin) throw new Error("the test network needs 13 accounts");

  const dir = mkdtempSync(path.join(tmpdir(), "indexer-chain-"));
  const addressBookFile = await writeAddressBook({ ...facilitator.addressBook, postman: postman.address }, dir);
  const rpc: JsonRpcBridge = await serveJsonRpc(connection.provider);
  const deployed = await connection.networkHelpers.takeSnapshot();

  return {
    connection,
    facilitator,
    rpc,
    addressBookFile,
    postmanPrivateKey: postman.privateKey,
    /** Depositors of the tests' own (the fixture's named accounts are 0 to 5). */
    depositors: { alice, bob, carol, dave, erin },
    async reset() {
      await deployed.restore();
      rpc.requests.length = 0;
    },
    async close() {
      await rpc.close();
      await connection.close();
    },
  };
}

export type LocalChain = Awaited<ReturnType<typeof startLocalChain>>;

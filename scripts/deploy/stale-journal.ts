import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import type { Provider } from "ethers";

/** The chain id of `hardhat node`, plain or forked: a chain that forgets everything when it restarts. */
const LOCAL_CHAIN_ID = 31337;

/**
 * Ignition journals a deployment per chain id and, on a rerun, returns the addresses it journaled without
 * checking them. A restarted local node keeps its chain id but not its contracts, so its old journal would hand
 * out dead addresses: discard it when any journaled address has no code. On any other chain that would mean the
 * journal belongs to another network, which is for a person to resolve.
 *
 * @returns Whether a stale journal was discarded.
 */
export async function discardStaleJournal(ignitionDir: string, provider: Provider, chainId: number): Promise<boolean> {
  const deploymentDir = path.join(ignitionDir, "deployments", `chain-${chainId}`);
  const journaled = await readFile(path.join(deploymentDir, "deployed_addresses.json"), "utf8").then(
    (text) => Object.values(JSON.parse(text) as Record<string, string>),
    () => [],
  );
  const codes = await Promise.all(journaled.map((address) => provider.getCode(address)));
  if (!codes.includes("0x")) return false;
  if (chainId !== LOCAL_CHAIN_ID) {
    throw new Error(`${deploymentDir} journals contracts that chain ${chainId} does not have; check it by hand`);
  }
  await rm(deploymentDir, { recursive: true });
  return true;
}

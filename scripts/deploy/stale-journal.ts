import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import type { Provider } from "ethers";

/**
 * Ignition journals a deployment per chain id and, on a rerun, returns the addresses it journaled without
 * checking them. A restarted local node (`local`: its RPC is on this machine) keeps its chain id but not its
 * contracts, so its old journal would hand out dead addresses: discard it when any journaled address has no code.
 * On a remote chain that would mean the journal belongs to another network, which is for a person to resolve.
 *
 * @returns Whether a stale journal was discarded.
 */
export async function discardStaleJournal(ignitionDir: string, provider: Provider, chainId: number, local: boolean): Promise<boolean> {
  const deploymentDir = path.join(ignitionDir, "deployments", `chain-${chainId}`);
  const journaled = await readFile(path.join(deploymentDir, "deployed_addresses.json"), "utf8").then(
    (text) => Object.values(JSON.parse(text) as Record<string, string>),
    () => [],
  );
  const codes = await Promise.all(journaled.map((address) => provider.getCode(address)));
  if (!codes.includes("0x")) return false;
  if (!local) {
    throw new Error(`${deploymentDir} journals contracts that chain ${chainId} does not have; check it by hand`);
  }
  await rm(deploymentDir, { recursive: true });
  return true;
}

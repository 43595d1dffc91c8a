import { getAddress, ZeroHash, type Interface, type Provider } from "ethers";

/**
 * The roles an AccessControl contract's ABI defines, id to name: DEFAULT_ADMIN_ROLE (0x00...) and every constant
 * getter named `*_ROLE` returning bytes32, read from the contract at `address`.
 */
export async function definedRoles(abi: Interface, address: string, provider: Provider): Promise<Map<string, string>> {
  const roles = new Map<string, string>([[ZeroHash, "DEFAULT_ADMIN_ROLE"]]);
  const getters: string[] = [];
  abi.forEachFunction((fragment) => {
    const constant = fragment.stateMutability === "view" || fragment.stateMutability === "pure";
    if (/_ROLE$/.test(fragment.name) && constant && fragment.inputs.length === 0 && fragment.outputs.length === 1 && fragment.outputs[0]!.type === "bytes32") {
      getters.push(fragment.name);
    }
  });
  for (const name of getters) {
    const [id] = abi.decodeFunctionResult(name, await provider.call({ to: address, data: abi.encodeFunctionData(name) })) as unknown as [string];
    roles.set(id, name);
  }
  return roles;
}

/**
 * Every role's holders at `toBlock`, replayed from the contract's RoleGranted and RoleRevoked events (decoded with
 * its ABI) since `fromBlock`, read `maxRange` blocks at a time: AccessControl keeps no list of holders, its events
 * are the only record. Role id to checksummed addresses, in the order they were granted.
 */
export async function replayRoleHolders(
  abi: Interface,
  address: string,
  provider: Provider,
  blocks: { fromBlock: number; toBlock: number; maxRange: number },
): Promise<Map<string, string[]>> {
  const granted = abi.getEvent("RoleGranted");
  const revoked = abi.getEvent("RoleRevoked");
  if (granted === null || revoked === null) throw new Error("the ABI has no RoleGranted/RoleRevoked events: not an AccessControl contract");
  const holders = new Map<string, Set<string>>();
  for (let from = blocks.fromBlock; from <= blocks.toBlock; from += blocks.maxRange) {
    const to = Math.min(from + blocks.maxRange - 1, blocks.toBlock);
    const logs = await provider.getLogs({ address, fromBlock: from, toBlock: to, topics: [[granted.topicHash, revoked.topicHash]] });
    for (const log of logs) {
      const event = abi.parseLog(log);
      if (event === null) continue;
      const role = event.args.role as string;
      const account = getAddress(event.args.account as string);
      const set = holders.get(role) ?? new Set<string>();
      if (event.name === "RoleGranted") set.add(account);
      else set.delete(account);
      holders.set(role, set);
    }
  }
  return new Map([...holders].map(([role, set]) => [role, [...set]]));
}

import { ZeroHash, type Interface, type Provider } from "ethers";

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

import { getAddress, type Provider } from "ethers";
import type { AddressBook } from "../../lib/address-book.js";
import { Entrypoint__factory } from "../../types/ethers-contracts/index.js";
import { checkList, sameAddress, type DeploymentCheck } from "./deployment-check.js";
import { definedRoles, replayRoleHolders } from "./role-holders.js";

const list = (addresses: string[]) => (addresses.length === 0 ? "nobody" : addresses.join(", "));

/**
 * Checks that each role of the entrypoint (its ABI's, and any its events name) is held by exactly the addresses
 * the address book names: DEFAULT_ADMIN_ROLE the deployer, POSTMAN_ROLE the postman, REFUNDER_ROLE the refunder,
 * any other role nobody; `roleHolders` replaces the book's holders of the roles it names. Holders are replayed from
 * the role events since the book's start block, and each is checked against hasRole now.
 */
export async function checkRoles(
  provider: Provider,
  book: AddressBook,
  roleHolders: Record<string, string[]>,
  maxBlockRange: number,
): Promise<DeploymentCheck[]> {
  const { checks, add } = checkList();
  const abi = Entrypoint__factory.createInterface();
  const entrypoint = Entrypoint__factory.connect(book.entrypoint, provider);
  const names = await definedRoles(abi, book.entrypoint, provider);
  const toBlock = await provider.getBlockNumber();
  const replayed = await replayRoleHolders(abi, book.entrypoint, provider, { fromBlock: book.startBlock, toBlock, maxRange: maxBlockRange });
  const named: Record<string, string[] | undefined> = {
    DEFAULT_ADMIN_ROLE: [book.deployer],
    POSTMAN_ROLE: [book.postman],
    REFUNDER_ROLE: book.refunder === undefined ? undefined : [book.refunder],
    ...roleHolders,
  };
  for (const name of Object.keys(roleHolders).filter((role) => ![...names.values()].includes(role))) {
    add(`role ${name}`, list(roleHolders[name]!), "the entrypoint defines no such role", false);
  }
  for (const role of new Set([...names.keys(), ...replayed.keys()])) {
    const name = names.get(role) ?? role;
    const expected = name in named ? named[name] : [];
    const found = replayed.get(role) ?? [];
    const strangers = found.filter((holder) => !expected?.some((address) => sameAddress(address, holder)));
    const missing = (expected ?? []).filter((address) => !found.some((holder) => sameAddress(address, holder)));
    // The events and the current state must agree: a start block after the deployment would miss grants.
    const disagreeing: string[] = [];
    for (const account of new Set([...found, ...(expected ?? []).map((address) => getAddress(address))])) {
      if ((await entrypoint.hasRole(role, account, { blockTag: toBlock })) !== found.includes(account)) disagreeing.push(account);
    }
    const notes = [
      ...(strangers.length > 0 ? [`not named: ${strangers.join(", ")}`] : []),
      ...(missing.length > 0 ? [`missing: ${missing.join(", ")}`] : []),
      ...(disagreeing.length > 0 ? [`hasRole disagrees with the events for ${disagreeing.join(", ")}: is the start block right?`] : []),
    ];
    add(
      `role ${name}`,
      expected === undefined ? "not in the address book (ROLE_HOLDERS names it)" : list(expected),
      `${list(found)}${notes.length > 0 ? ` (${notes.join("; ")})` : ""}`,
      expected !== undefined && notes.length === 0,
    );
  }
  return checks;
}

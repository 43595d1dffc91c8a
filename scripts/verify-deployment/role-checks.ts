import type { Provider } from "ethers";
import type { AddressBook } from "../../lib/address-book.js";
import { Entrypoint__factory } from "../../types/ethers-contracts/index.js";
import { checkList, sameAddress, type DeploymentCheck } from "./deployment-check.js";
import { definedRoles } from "./role-holders.js";
import { creationBlock, holdsAfter, readContractHistory, type ContractHistory, type RoleChange } from "./role-history.js";

const list = (addresses: string[]) => (addresses.length === 0 ? "nobody" : addresses.join(", "));

/**
 * An account's tenure of a role and what it did meanwhile, in one line: "0xA (granted by 0xD at block 5, renounced
 * at block 9): published ASP root 1 (block 7)". Only the actions of its tenure are attributed, one transaction read each.
 */
async function tenure(account: string, changes: RoleChange[], history: ContractHistory): Promise<string> {
  const steps = changes.map((change) => `${change.kind === "revoked" && sameAddress(change.by, account) ? "renounced" : `${change.kind} by ${change.by}`} at block ${change.block}`);
  const [first, last] = [changes[0]!.block, holdsAfter(changes) ? Infinity : changes.at(-1)!.block];
  const actions: string[] = [];
  for (const action of history.actions.filter(({ block }) => block >= first && block <= last)) {
    if (sameAddress(await history.senderOf(action), account)) actions.push(`${action.what} (block ${action.block})`);
  }
  return `${account} (${steps.join(", ")}): ${actions.length === 0 ? "no recorded action" : actions.join("; ")}`;
}

export interface RoleExpectations {
  /** Holders by role name that replace the address book's (a key added or rotated since the deployment). */
  roleHolders: Record<string, string[]>;
  /** Accounts known to have held a role earlier (a rotated-out key), by role name: their history is not flagged. */
  pastRoleHolders: Record<string, string[]>;
}

/**
 * Checks each role of the entrypoint (its ABI's, and any its events name) from the contract's whole history, read
 * from its creation block, which is found on chain (never the address book's start block): it is held now by
 * exactly the addresses the address book names (DEFAULT_ADMIN_ROLE the deployer, POSTMAN_ROLE the postman, any
 * other role nobody; `roleHolders` replaces the book's for the roles it names), as
 * hasRole confirms for every account that ever held it; and nobody outside those holders and `pastRoleHolders`
 * ever held it, each such past holder reported with what it did (roots published, settings changed, roles granted).
 */
export async function checkRoles(
  provider: Provider,
  book: AddressBook,
  expectations: RoleExpectations,
  maxBlockRange: number,
  progress: (line: string) => void = () => {},
): Promise<DeploymentCheck[]> {
  const { checks, add } = checkList();
  const abi = Entrypoint__factory.createInterface();
  const entrypoint = Entrypoint__factory.connect(book.entrypoint, provider);
  const names = await definedRoles(abi, book.entrypoint, provider);
  const toBlock = await provider.getBlockNumber();
  const fromBlock = await creationBlock(provider, book.entrypoint, toBlock);
  progress(`reading the entrypoint's events from block ${fromBlock} (its creation, found on chain) to ${toBlock}`);
  const history = await readContractHistory(abi, book.entrypoint, provider, { fromBlock, toBlock, maxRange: maxBlockRange }, (role) => names.get(role) ?? role, progress);
  const named: Record<string, string[]> = {
    DEFAULT_ADMIN_ROLE: [book.deployer],
    POSTMAN_ROLE: [book.postman],
    ...expectations.roleHolders,
  };
  for (const name of Object.keys(expectations.roleHolders).filter((role) => ![...names.values()].includes(role))) {
    add(`role ${name}`, list(expectations.roleHolders[name]!), "the entrypoint defines no such role", false);
  }
  for (const role of new Set([...names.keys(), ...history.roles.keys()])) {
    const name = names.get(role) ?? role;
    const expected = named[name] ?? [];
    const isExpected = (account: string) => expected.some((address) => sameAddress(address, account));
    const changes = history.roles.get(role) ?? new Map<string, RoleChange[]>();
    const found = [...changes].filter(([, accountChanges]) => holdsAfter(accountChanges)).map(([account]) => account);
    const strangers = found.filter((holder) => !isExpected(holder));
    const missing = expected.filter((address) => !found.some((holder) => sameAddress(address, holder)));
    // The events and the current state must agree, for every account that ever held the role.
    const disagreeing: string[] = [];
    for (const account of new Set([...changes.keys(), ...expected])) {
      if ((await entrypoint.hasRole(role, account, { blockTag: toBlock })) !== found.some((holder) => sameAddress(holder, account))) disagreeing.push(account);
    }
    const notes = [
      ...(strangers.length > 0 ? [`not named: ${(await Promise.all(strangers.map((account) => tenure(account, changes.get(account)!, history)))).join(" | ")}`] : []),
      ...(missing.length > 0 ? [`missing: ${missing.join(", ")}`] : []),
      ...(disagreeing.length > 0 ? [`hasRole disagrees with the events for ${disagreeing.join(", ")}: does the RPC drop logs?`] : []),
    ];
    add(
      `role ${name}`,
      list(expected),
      `${list(found)}${notes.length > 0 ? ` (${notes.join("; ")})` : ""}`,
      notes.length === 0,
    );

    const known = expectations.pastRoleHolders[name] ?? [];
    const pastStrangers = [...changes].filter(([account, accountChanges]) => !holdsAfter(accountChanges) && !isExpected(account) && !known.some((address) => sameAddress(address, account)));
    add(
      `role ${name} history since block ${fromBlock} (creation)`,
      known.length === 0 ? "no past holder outside the expected holders" : `no past holder but ${list(known)} (PAST_ROLE_HOLDERS)`,
      pastStrangers.length === 0 ? "none" : `held and given up by ${(await Promise.all(pastStrangers.map(([account, accountChanges]) => tenure(account, accountChanges, history)))).join(" | ")}`,
      pastStrangers.length === 0,
    );
  }
  return checks;
}

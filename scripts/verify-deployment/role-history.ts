import { getAddress, type Interface, type LogDescription, type Provider } from "ethers";

/** The chain cannot give the history verify:deployment reads: the contract is not there, or the RPC keeps no past state. */
export class ChainHistoryError extends Error {
  override name = "ChainHistoryError";
}

/**
 * The block that created the contract at `address`: the first whose state holds its code, found by binary search on
 * eth_getCode over block numbers, so the history read from it cannot start after anything a deployer did.
 */
export async function creationBlock(provider: Provider, address: string, latest: number): Promise<number> {
  const hasCode = async (block: number) =>
    (await provider.getCode(address, block).catch((error: unknown) => {
      throw new ChainHistoryError(
        `the RPC cannot give the code of ${address} at block ${block} (${error instanceof Error ? error.message.split("\n")[0] : String(error)}): ` +
          "finding the entrypoint's creation block needs an RPC that answers eth_getCode at past blocks: point RPC_URL at an archive node",
      );
    })) !== "0x";
  if (!(await hasCode(latest))) throw new ChainHistoryError(`${address} has no code at block ${latest}: is RPC_URL the deployment's chain?`);
  let [low, high] = [0, latest];
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (await hasCode(middle)) high = middle;
    else low = middle + 1;
  }
  return low;
}

/** One grant or revocation of a role to an account: when, and by whom (the event's sender). */
export interface RoleChange {
  kind: "granted" | "revoked";
  block: number;
  by: string;
}

/** Something the contract recorded being done: by the event's sender where it names one, else by its transaction's. */
export interface ContractAction {
  block: number;
  transactionHash: string;
  /** The event's own sender (role events); else `ContractHistory.senderOf` asks the chain. */
  sender?: string;
  what: string;
}

/** Every role change (role id, then account, in order) and every action the contract's events record. */
export interface ContractHistory {
  roles: Map<string, Map<string, RoleChange[]>>;
  actions: ContractAction[];
  /** Who did `action`: its event's sender, or its transaction's signer (read once per transaction). */
  senderOf(action: ContractAction): Promise<string>;
}

/** What an event says an account did, in words; `roleName` names role ids. Undefined for events anyone may cause. */
function describeAction(event: LogDescription, roleName: (role: string) => string): string | undefined {
  const { args } = event;
  switch (event.name) {
    case "RoleGranted":
      return `granted ${roleName(args.role as string)} to ${getAddress(args.account as string)}`;
    case "RoleRevoked":
      return sameAccount(args.account as string, args.sender as string)
        ? `renounced ${roleName(args.role as string)}`
        : `revoked ${roleName(args.role as string)} from ${getAddress(args.account as string)}`;
    case "RoleAdminChanged":
      return `made ${roleName(args.newAdminRole as string)} the admin of ${roleName(args.role as string)}`;
    case "RootUpdated":
      return `published ASP root ${String(args.root)}${args.revoking === true ? " (revoking earlier roots)" : ""}`;
    case "AspRootsRevoked":
      return `revoked every earlier ASP root but ${(args.keptRoots as unknown[]).length}`;
    case "RefundDeposited":
      return `deposited a refund of ${String(args.value)} from ${getAddress(args.payer as string)}`;
    case "AccessFeeTreasuryUpdated":
      return `set the access-fee treasury to ${getAddress(args.treasury as string)}`;
    case "PoolRegistered":
      return `registered pool ${getAddress(args.pool as string)} for ${getAddress(args.asset as string)}`;
    case "AccessFeePaid":
      return undefined;
    default:
      return `${event.name}(${event.args.map(String).join(", ")})`;
  }
}

const sameAccount = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * The contract's whole recorded history from `fromBlock` (its creation block) to `toBlock`, read `maxRange` blocks
 * at a time and decoded with its ABI: who was granted and revoked each role, and what was done with the contract.
 * AccessControl keeps no list of holders; its events are the only record. `progress` hears every 50 requests.
 */
export async function readContractHistory(
  abi: Interface,
  address: string,
  provider: Provider,
  blocks: { fromBlock: number; toBlock: number; maxRange: number },
  roleName: (role: string) => string,
  progress: (line: string) => void = () => {},
): Promise<ContractHistory> {
  if (abi.getEvent("RoleGranted") === null || abi.getEvent("RoleRevoked") === null) {
    throw new Error("the ABI has no RoleGranted/RoleRevoked events: not an AccessControl contract");
  }
  const roles = new Map<string, Map<string, RoleChange[]>>();
  const actions: ContractAction[] = [];
  const chunks = Math.ceil((blocks.toBlock - blocks.fromBlock + 1) / blocks.maxRange);
  for (let chunk = 0, from = blocks.fromBlock; from <= blocks.toBlock; chunk++, from += blocks.maxRange) {
    if (chunk > 0 && chunk % 50 === 0) progress(`read the entrypoint's events up to block ${from - 1} (${chunk} of ${chunks} requests)`);
    const logs = await provider.getLogs({ address, fromBlock: from, toBlock: Math.min(from + blocks.maxRange - 1, blocks.toBlock) });
    for (const log of logs) {
      const event = abi.parseLog(log);
      if (event === null) continue;
      const what = describeAction(event, roleName);
      const sender = "sender" in event.args.toObject() ? getAddress(event.args.sender as string) : undefined;
      if (what !== undefined) actions.push({ block: log.blockNumber, transactionHash: log.transactionHash, sender, what });
      if (event.name !== "RoleGranted" && event.name !== "RoleRevoked") continue;
      const role = event.args.role as string;
      const account = getAddress(event.args.account as string);
      const accounts = roles.get(role) ?? new Map<string, RoleChange[]>();
      accounts.set(account, [...(accounts.get(account) ?? []), { kind: event.name === "RoleGranted" ? "granted" : "revoked", block: log.blockNumber, by: sender! }]);
      roles.set(role, accounts);
    }
  }
  const signers = new Map<string, Promise<string>>();
  const senderOf = async (action: ContractAction) => {
    if (action.sender !== undefined) return action.sender;
    if (!signers.has(action.transactionHash)) signers.set(action.transactionHash, provider.getTransaction(action.transactionHash).then((tx) => getAddress(tx!.from)));
    return signers.get(action.transactionHash)!;
  };
  return { roles, actions, senderOf };
}

/** Whether the account holds the role after `changes`: its last change was a grant. */
export const holdsAfter = (changes: RoleChange[]) => changes.at(-1)?.kind === "granted";

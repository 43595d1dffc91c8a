import type { TransactionReceipt } from "ethers";
import { IPrivacyPool__factory } from "../../types/ethers-contracts/index.js";
import type { DeployedFacilitator } from "../../test/contracts/helpers/fixtures.js";
import type { Classifier, Part } from "./gas-breakdown.js";
import { slotKey } from "./gas-breakdown.js";
import { mappingSlot, SLOT } from "./simulated-state-tree.js";

/** Entrypoint's storage: AccessControl's roles, then its own variables in order (the reentrancy guard is transient). */
const ENTRYPOINT_SLOT = { aspRootEntries: 4n, aspRootCount: 5n };
const MAX_LEVELS = 40;

/**
 * What the bench calls each of the facilitator's callees and storage slots: the verifier, the asset, the Poseidon
 * libraries; the pool's tree and root-history slots touched by the leaves and roots `receipts` inserted, and the
 * entrypoint's entries of `aspRoots`. Every other slot is "other storage".
 */
export function facilitatorClassifier(
  { addressBook }: DeployedFacilitator,
  receipts: TransactionReceipt[],
  aspRoots: bigint[],
): Classifier {
  const { privacyPool: pool, entrypoint, verifier, usdc, poseidon } = addressBook;
  const callees = new Map<string, Part>([
    [verifier.toLowerCase(), "verifier"],
    [usdc.toLowerCase(), "transfers"],
    ...Object.values(poseidon).map((library): [string, Part] => [library.toLowerCase(), "poseidon"]),
  ]);
  const slots = new Map<string, Part>();
  const add = (contract: string, slot: bigint | string, part: Part) => slots.set(slotKey(contract, `${slot}`), part);

  add(pool, SLOT.treeSizeAndDepth, "treeStorage");
  for (let level = 0n; level <= MAX_LEVELS; level++) add(pool, mappingSlot(level, SLOT.sideNodes), "treeStorage");
  for (const { leaf, root } of leavesInserted(pool, receipts)) {
    add(pool, mappingSlot(leaf, SLOT.leaves), "treeStorage");
    add(pool, mappingSlot(root, SLOT.rootEntries), "rootHistory");
  }
  add(entrypoint, ENTRYPOINT_SLOT.aspRootCount, "rootHistory");
  for (const root of aspRoots) add(entrypoint, mappingSlot(root, ENTRYPOINT_SLOT.aspRootEntries), "rootHistory");
  return { callees, slots };
}

/** The (leaf, root) of every LeafInserted the pool emitted in `receipts`. */
function leavesInserted(pool: string, receipts: TransactionReceipt[]) {
  const events = IPrivacyPool__factory.createInterface();
  return receipts.flatMap((receipt) =>
    receipt.logs
      .filter((log) => log.address.toLowerCase() === pool.toLowerCase())
      .map((log) => events.parseLog(log))
      .filter((event) => event?.name === "LeafInserted")
      .map((event) => ({ leaf: event!.args.leaf as bigint, root: event!.args.root as bigint })),
  );
}

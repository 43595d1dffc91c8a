import type { DeployedFacilitator } from "../../test/contracts/helpers/fixtures.js";
import type { Classifier, Part } from "./gas-breakdown.js";
import { slotKey } from "./gas-breakdown.js";
import { inlinedCode } from "./inlined-code.js";
import { mappingSlot, SLOT } from "../simulated-state-tree.js";

/** Entrypoint's storage: AccessControl's roles, then its own variables in order (the reentrancy guard is transient). */
const ENTRYPOINT_SLOT = { aspRootEntries: 4n, aspRootCount: 5n };
const MAX_LEVELS = 40;

/**
 * What the bench calls each of the facilitator's callees, storage slots and inlined code: the asset, the linked
 * Poseidon libraries, the pool's inlined Poseidon2 and its inlined verifier; the pool's tree slots (size and depth, side nodes)
 * and its ring of state roots, and the entrypoint's entries of `aspRoots`. Every other slot is "other storage".
 */
export async function facilitatorClassifier({ addressBook, privacyPool }: DeployedFacilitator, aspRoots: bigint[]): Promise<Classifier> {
  const { privacyPool: pool, entrypoint, usdc, poseidon } = addressBook;
  const rootHistorySize = await privacyPool.ROOT_HISTORY_SIZE();
  const callees = new Map<string, Part>([
    [usdc.toLowerCase(), "transfers"],
    // The inlined verifier's elliptic-curve precompiles (ecAdd, ecMul, ecPairing), which nothing else calls.
    ...[6, 7, 8].map((precompile): [string, Part] => [`0x${precompile.toString(16).padStart(40, "0")}`, "verifier"]),
    ...Object.values(poseidon).map((library): [string, Part] => [library.toLowerCase(), "poseidon"]),
  ]);
  const slots = new Map<string, Part>();
  const add = (contract: string, slot: bigint | string, part: Part) => slots.set(slotKey(contract, `${slot}`), part);

  add(pool, SLOT.treeSizeAndDepth, "treeStorage");
  for (let level = 0n; level <= MAX_LEVELS; level++) add(pool, mappingSlot(level, SLOT.sideNodes), "treeStorage");
  for (let i = 0n; i < rootHistorySize; i++) add(pool, SLOT.roots + i, "rootHistory");
  add(entrypoint, ENTRYPOINT_SLOT.aspRootCount, "rootHistory");
  for (const root of aspRoots) add(entrypoint, mappingSlot(root, ENTRYPOINT_SLOT.aspRootEntries), "rootHistory");
  const inlined = new Map<string, { pcs: Set<number>; part: Part }[]>([
    [pool.toLowerCase(), [
      { pcs: await inlinedCode("PrivacyPool", "lib/poseidon/Poseidon2T3.sol"), part: "poseidon" as Part },
      { pcs: await inlinedCode("PrivacyPool", "verifiers/WithdrawalVerifier.sol"), part: "verifier" as Part },
    ]],
  ]);
  return { callees, slots, inlined };
}

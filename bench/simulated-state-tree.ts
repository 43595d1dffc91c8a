import { AbiCoder, keccak256 } from "ethers";
import type { NetworkConnection } from "hardhat/types/network";
import { createLeanIMT } from "../sdk/index.js";
import type { PrivacyPool } from "../types/ethers-contracts/index.js";

// PrivacyPool's storage layout, in declaration order (it inherits no state): nonce, then the state tree
// {(size, depth, window, windowInserts, previousWindowInserts), sideNodes, roots[ROOT_HISTORY_SIZE], evicted}, the
// first five sharing a slot (64, 8, 32, 32 and 32 bits, low to high), then the nullifiers, the depositors and the
// accrued fees. fillStateTree and accruedFeesOnce check what they wrote through the pool's own views, so a change of
// layout fails here instead of measuring a broken state.
export const SLOT = { nonce: 0n, treeSizeAndDepth: 1n, sideNodes: 2n, roots: 3n, accruedFees: 70n };

export const mappingSlot = (key: bigint, slot: bigint) =>
  keccak256(AbiCoder.defaultAbiCoder().encode(["uint256", "uint256"], [key, slot]));

/**
 * Puts the pool's state tree in the state `leaves.length` deposits of `leaves` would leave, without sending
 * them (100k Poseidon inserts through the EVM take hours). An insert's gas depends only on the tree's size (which
 * levels hash, which store) and on which slots are already non-zero, so this writes exactly the storage an insert
 * reads or overwrites: size and depth, the side nodes (the last left node of each level), the ring of the last
 * ROOT_HISTORY_SIZE roots and the deposit nonce. The window counts stay zero: the measured inserts are no flood.
 * Side nodes and roots are those of the real tree, so the next insert's root is the true root of leaves + 1,
 * which the caller can check against the returned tree.
 *
 * @returns The TypeScript LeanIMT of `leaves`, for the caller's next inserts and Merkle witnesses.
 */
export async function fillStateTree(connection: NetworkConnection, pool: PrivacyPool, leaves: bigint[]) {
  const { networkHelpers } = connection;
  const historySize = Number(await pool.ROOT_HISTORY_SIZE());
  const address = await pool.getAddress();
  const write = (slot: bigint | string, value: bigint) => networkHelpers.setStorageAt(address, slot, value);

  const bulk = Math.max(0, leaves.length - historySize);
  const tree = createLeanIMT(leaves.slice(0, bulk));
  for (const leaf of leaves.slice(bulk)) {
    tree.insert(leaf);
    await write(SLOT.roots + BigInt(tree.size % historySize), tree.root);
  }

  const nodes = JSON.parse(tree.export()) as string[][];
  for (let level = 0; level < tree.depth; level++) {
    const position = (tree.size - 1) >> level;
    const lastLeftNode = nodes[level]![position - (position & 1)]!;
    await write(mappingSlot(BigInt(level), SLOT.sideNodes), BigInt(lastLeftNode));
  }
  await write(SLOT.treeSizeAndDepth, BigInt(tree.size) | (BigInt(tree.depth) << 64n));
  await write(SLOT.nonce, BigInt(tree.size));

  const matches =
    (await pool.currentTreeSize()) === BigInt(tree.size) &&
    (await pool.currentTreeDepth()) === BigInt(tree.depth) &&
    (await pool.currentRoot()) === tree.root &&
    (await pool.stateTreeSizeAt(tree.root)) === BigInt(tree.size) &&
    (await pool.stateTreeDepthAt(tree.root)) === BigInt(tree.depth) &&
    (await pool.nonce()) === BigInt(tree.size);
  if (!matches) throw new Error("PrivacyPool's storage layout changed: update SLOT in simulated-state-tree.ts");
  return tree;
}

/**
 * Gives `feeRecipient` fees accrued in the pool, as a treasury that has claimed before and earned since has: its
 * slot is non-zero, so the measured withdrawal's fee rewrites it (a first fee ever would create it, 17k more).
 */
export async function accruedFeesOnce(connection: NetworkConnection, pool: PrivacyPool, feeRecipient: string) {
  const slot = keccak256(AbiCoder.defaultAbiCoder().encode(["address", "uint256"], [feeRecipient, SLOT.accruedFees]));
  await connection.networkHelpers.setStorageAt(await pool.getAddress(), slot, 2n);
  if ((await pool.accruedFeesOf(feeRecipient)) !== 2n) {
    throw new Error("PrivacyPool's storage layout changed: update SLOT.accruedFees in simulated-state-tree.ts");
  }
}

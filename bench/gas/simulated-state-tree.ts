import { AbiCoder, keccak256 } from "ethers";
import type { NetworkConnection } from "hardhat/types/network";
import { createLeanIMT } from "../../sdk/index.js";
import type { PrivacyPool } from "../../types/ethers-contracts/index.js";

// PrivacyPool's storage layout, in declaration order (it inherits no state): nonce, then the state tree
// {(size, depth), sideNodes, leaves}, size and depth sharing a slot (64 and 8 bits, low to high), then the root
// history {entries, (count, epoch)}, whose count the pool leaves at zero (its tree size counts the roots), then
// the nullifiers and the depositors. An entry packs {ordinal, recordedAtBlock, epoch, depth} (64, 64, 64 and 8
// bits, low to high).
// fillStateTree checks what it wrote through the pool's own views, so a change of layout fails here instead of
// measuring a broken tree.
export const SLOT = { nonce: 0n, treeSizeAndDepth: 1n, sideNodes: 2n, leaves: 3n, rootEntries: 4n, nullifiers: 6n, depositors: 7n };

export const mappingSlot = (key: bigint, slot: bigint) =>
  keccak256(AbiCoder.defaultAbiCoder().encode(["uint256", "uint256"], [key, slot]));

/**
 * Puts the pool's state tree in the state `leaves.length` deposits of `leaves` would leave, without sending
 * them (100k Poseidon inserts through the EVM take hours). An insert's gas depends only on the tree's size (which
 * levels hash, which store) and on which slots are already non-zero, so this writes exactly the storage an insert
 * reads or overwrites: size, depth, the side nodes (the last left node of each level, and the root), the history
 * entries of the last ROOT_HISTORY_SIZE roots (recorded at the current block) and the deposit nonce. The
 * leaf -> index map is left out: an insert only reads the entry of its own, new leaf. Side nodes and roots are those of the real tree, so the next insert's root is the
 * true root of leaves + 1, which the caller can check against the returned tree.
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
  const block = BigInt(await connection.ethers.provider.getBlockNumber());
  for (const [i, leaf] of leaves.slice(bulk).entries()) {
    tree.insert(leaf);
    const ordinal = BigInt(bulk + i + 1);
    await write(mappingSlot(tree.root, SLOT.rootEntries), ordinal | (block << 64n) | (BigInt(tree.depth) << 192n));
  }

  const nodes = JSON.parse(tree.export()) as string[][];
  for (let level = 0; level < tree.depth; level++) {
    const position = (tree.size - 1) >> level;
    const lastLeftNode = nodes[level]![position - (position & 1)]!;
    await write(mappingSlot(BigInt(level), SLOT.sideNodes), BigInt(lastLeftNode));
  }
  await write(mappingSlot(BigInt(tree.depth), SLOT.sideNodes), tree.root);
  await write(SLOT.treeSizeAndDepth, BigInt(tree.size) | (BigInt(tree.depth) << 64n));
  await write(SLOT.nonce, BigInt(tree.size));

  const matches =
    (await pool.currentTreeSize()) === BigInt(tree.size) &&
    (await pool.currentTreeDepth()) === BigInt(tree.depth) &&
    (await pool.currentRoot()) === tree.root &&
    (await pool.isKnownStateRoot(tree.root)) &&
    (await pool.stateTreeDepthAt(tree.root)) === BigInt(tree.depth) &&
    (await pool.nonce()) === BigInt(tree.size);
  if (!matches) throw new Error("PrivacyPool's storage layout changed: update SLOT in simulated-state-tree.ts");
  return tree;
}

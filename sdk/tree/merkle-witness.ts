import { LeanIMT } from "@zk-kit/lean-imt";
import { poseidon2Hash2 } from "../crypto/poseidon2.js";
import { MAX_TREE_DEPTH } from "../circuit/config.js";

/** A Merkle path in the circuit's uncompressed form (see circuits/lean_imt.circom). */
export interface MerkleWitness {
  root: bigint;
  /** Depth of the tree the path was taken from. */
  depth: number;
  /** Position of the leaf in the tree. */
  index: number;
  /** Sibling per level, 0 where the node has none, padded with 0 to the circuit's maximum depth. */
  siblings: bigint[];
}

/**
 * The node hash of the state and ASP trees: Poseidon2 (sdk/crypto/poseidon2.ts), as the pool contract
 * (Poseidon2T3.sol) and the circuit (circuits/poseidon2.circom) hash them. Notes keep circomlib's Poseidon.
 */
export const nodeHash = poseidon2Hash2;

/** A LeanIMT hashing with nodeHash(left, right), the same tree as the pool contract and the circuit. */
export function createLeanIMT(leaves: bigint[] = []): LeanIMT<bigint> {
  return new LeanIMT<bigint>(nodeHash, leaves);
}

/**
 * The path of the leaf at `leafIndex`. LeanIMT's own proofs leave out the levels where a node has no sibling
 * (it is promoted unchanged) and renumber the index accordingly; the circuit wants every level, so the
 * levels without a sibling are put back as 0.
 */
export function merkleWitness(tree: LeanIMT<bigint>, leafIndex: number, maxDepth = MAX_TREE_DEPTH): MerkleWitness {
  if (tree.depth > maxDepth) {
    throw new RangeError(`tree depth ${tree.depth} exceeds the circuit's maximum depth ${maxDepth}`);
  }
  const proof = tree.generateProof(leafIndex);
  const siblings: bigint[] = [];
  let compressed = 0;
  let levelSize = tree.size;
  let nodeIndex = leafIndex;
  for (let level = 0; level < tree.depth; level++) {
    const isRightNode = nodeIndex % 2 === 1;
    const hasSibling = isRightNode || nodeIndex + 1 < levelSize;
    siblings.push(hasSibling ? proof.siblings[compressed++]! : 0n);
    nodeIndex = Math.floor(nodeIndex / 2);
    levelSize = Math.ceil(levelSize / 2);
  }
  while (siblings.length < maxDepth) siblings.push(0n);
  return { root: tree.root, depth: tree.depth, index: leafIndex, siblings };
}

/** The root a witness proves for `leaf`, computed as the circuit does; lets callers check a path before proving. */
export function rootOfWitness(leaf: bigint, { depth, index, siblings }: MerkleWitness): bigint {
  let node = leaf;
  for (let level = 0; level < depth; level++) {
    const sibling = siblings[level] ?? 0n;
    if (sibling === 0n) continue;
    const isRightNode = Math.floor(index / 2 ** level) % 2 === 1;
    node = isRightNode ? nodeHash(sibling, node) : nodeHash(node, sibling);
  }
  return node;
}

/** PrivacyPool.StatePath: a leaf's path as ragequit takes it, only the levels below the tree's depth. */
export interface StatePath {
  /** Number of leaves of the tree whose root the path leads to (the pool's stateTreeSizeAt(root)). */
  stateTreeSize: bigint;
  leafIndex: bigint;
  siblings: bigint[];
}

/** The StatePath of a witness taken from the state tree when it held `stateTreeSize` leaves. */
export function statePathOf({ depth, index, siblings }: MerkleWitness, stateTreeSize: number | bigint): StatePath {
  return { stateTreeSize: BigInt(stateTreeSize), leafIndex: BigInt(index), siblings: siblings.slice(0, depth) };
}

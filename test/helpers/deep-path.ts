import { hash1, rootOfWitness, type MerkleWitness, type WithdrawRequest } from "../../sdk/index.js";

/**
 * A path of `depth` levels for `leaf`, every level with a real (non-zero) sibling, and the root it proves: what a
 * tree of 2^depth leaves gives, without hashing 2^depth leaves. `seed` varies the siblings and the index.
 */
export function deepWitness(leaf: bigint, depth: number, seed: bigint, maxDepth: number): MerkleWitness {
  const siblings = Array.from({ length: maxDepth }, (_, level) => (level < depth ? hash1(seed * 1_000n + BigInt(level)) : 0n));
  const index = depth === 0 ? 0 : Number(seed % (1n << BigInt(Math.min(depth, 30))));
  const partial = { depth, index, siblings };
  return { ...partial, root: rootOfWitness(leaf, { ...partial, root: 0n }) };
}

/** `request` with its state and ASP paths replaced by paths of `depth` levels (same note, same label). */
export function atDepth(request: WithdrawRequest, depth: number, seed: bigint): WithdrawRequest {
  const maxDepth = request.stateWitness.siblings.length;
  return {
    ...request,
    stateWitness: deepWitness(request.note.commitment, depth, seed, maxDepth),
    aspWitness: deepWitness(request.note.label, depth, seed + 1n, maxDepth),
  };
}

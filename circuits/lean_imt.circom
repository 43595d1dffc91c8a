pragma circom 2.1.9;

include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";
include "./poseidon2.circom";

// LeanIMTInclusionProof
//
// Recomputes the root of a Lean Incremental Merkle Tree (@zk-kit/lean-imt: node = Poseidon2Hash2(left, right);
// a left node without a right sibling is promoted to the next level unchanged) from a leaf and a path.
//
// The path is given per level, uncompressed: `siblings[i]` is the sibling at level i or 0 where the node has
// none, and `leafIndex` is the leaf's position in the tree. Tree leaves are Poseidon outputs or keccak-derived
// labels, so 0 never occurs as a real node.
//
// Unlike Privacy Pools v1, the path is canonical: for a given (leaf, root) exactly one (depth, index, siblings)
// is accepted, because
//   - `depth` is range checked to [0, maxDepth];
//   - levels at and above `depth` carry no sibling and no index bit;
//   - a right child always has a left sibling (a zero left sibling is rejected);
//   - the top level (depth - 1) always hashes: in a LeanIMT of depth d >= 1 the top level holds exactly two
//     nodes, so a trailing promotion, which would let the same root be proven at depth d + 1, is rejected.
//
// Parameters: maxDepth, the largest tree depth a proof may declare (the pools use 32).
template LeanIMTInclusionProof(maxDepth) {
    // ---- inputs ----
    signal input leaf;                // the leaf whose membership is proven
    signal input leafIndex;           // position of the leaf, < 2^depth
    signal input siblings[maxDepth];  // sibling per level, 0 where the node has none
    signal input depth;               // declared tree depth (a public signal of the circuit that uses this)

    // ---- output ----
    signal output root;

    // 1. One-hot decomposition of depth. Exactly one k in [0, maxDepth] equals depth: this is the range check.
    signal isDepth[maxDepth + 1];
    var depthMatches = 0;
    for (var k = 0; k <= maxDepth; k++) {
        isDepth[k] <== IsEqual()([depth, k]);
        depthMatches += isDepth[k];
    }
    depthMatches === 1;

    // 2. active[i] = 1 exactly for the levels below depth.
    signal active[maxDepth + 1];
    active[0] <== 1 - isDepth[0];
    for (var i = 0; i < maxDepth; i++) {
        active[i + 1] <== active[i] - isDepth[i + 1];
    }

    // 3. Index bits; leafIndex < 2^maxDepth.
    signal indexBits[maxDepth] <== Num2Bits(maxDepth)(leafIndex);

    // 4. Walk the levels. node[i + 1] is the hash of the pair, or node[i] promoted where there is no sibling.
    signal node[maxDepth + 1];
    signal hasNoSibling[maxDepth];
    signal left[maxDepth];
    signal right[maxDepth];
    signal pairHash[maxDepth];
    node[0] <== leaf;
    for (var i = 0; i < maxDepth; i++) {
        hasNoSibling[i] <== IsZero()(siblings[i]);

        // Levels at or above depth: no sibling, no index bit.
        (1 - active[i]) * siblings[i] === 0;
        (1 - active[i]) * indexBits[i] === 0;
        // A right child always has a left sibling.
        indexBits[i] * hasNoSibling[i] === 0;
        // The top level always hashes (isDepth[i + 1] = 1 exactly when i = depth - 1).
        isDepth[i + 1] * hasNoSibling[i] === 0;

        left[i] <== node[i] + indexBits[i] * (siblings[i] - node[i]);
        right[i] <== siblings[i] + indexBits[i] * (node[i] - siblings[i]);
        pairHash[i] <== Poseidon2Hash2()([left[i], right[i]]);
        node[i + 1] <== pairHash[i] + hasNoSibling[i] * (node[i] - pairHash[i]);
    }

    root <== node[maxDepth];
}

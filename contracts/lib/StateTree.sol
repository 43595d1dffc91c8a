// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {SNARK_SCALAR_FIELD} from "@zk-kit/lean-imt.sol/Constants.sol";
import {PoseidonT3} from "./poseidon/PoseidonT3.sol";

/// @title StateTree
/// @notice The insert-only part of zk-kit's LeanIMT (same tree, same roots), hashing with the generated PoseidonT3
///         instead of poseidon-solidity's, which costs about twice as much per hash, and keeping size and depth in
///         one slot. Only what the pool uses: insert, membership and the root.
library StateTree {
    struct Data {
        // Number of leaves; with depth, one slot.
        uint64 size;
        // Depth of the tree, grown by one when an insert does not fit.
        uint8 depth;
        // Per level, the last node at an even position; sideNodes[depth] is the root.
        mapping(uint256 level => uint256 node) sideNodes;
        // 1 + the index of each leaf; 0 for a value that is no leaf.
        mapping(uint256 leaf => uint256 position) leaves;
    }

    error LeafGreaterThanSnarkScalarField();
    error LeafCannotBeZero();
    error LeafAlreadyExists();

    /// @return node The root of the tree with `leaf` appended.
    function insert(Data storage self, uint256 leaf) internal returns (uint256 node) {
        if (leaf >= SNARK_SCALAR_FIELD) revert LeafGreaterThanSnarkScalarField();
        if (leaf == 0) revert LeafCannotBeZero();
        if (self.leaves[leaf] != 0) revert LeafAlreadyExists();

        uint64 index = self.size;
        uint8 depth = self.depth;
        if (1 << depth < index + 1) ++depth;

        node = leaf;
        for (uint8 level; level < depth; ++level) {
            if ((index >> level) & 1 == 1) node = PoseidonT3.hash(self.sideNodes[level], node);
            else self.sideNodes[level] = node;
        }
        (self.size, self.depth) = (index + 1, depth);
        self.sideNodes[depth] = node;
        self.leaves[leaf] = index + 1;
    }

    function has(Data storage self, uint256 leaf) internal view returns (bool) {
        return self.leaves[leaf] != 0;
    }

    function root(Data storage self) internal view returns (uint256) {
        return self.sideNodes[self.depth];
    }
}

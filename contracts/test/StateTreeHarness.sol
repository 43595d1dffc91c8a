// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {StateTree} from "../lib/StateTree.sol";

/// @title StateTreeHarness
/// @notice Test-only: the pool's StateTree library behind external functions, so tests can insert plain leaves
///         (one at a time or in batches) and read the root history without proofs.
contract StateTreeHarness {
    using StateTree for StateTree.Data;

    StateTree.Data private _tree;

    event Inserted(uint256 root);

    constructor() {
        _tree.initialize();
    }

    function insert(uint256 leaf) external {
        emit Inserted(_tree.insert(leaf));
    }

    function insertMany(uint256[] calldata leaves) external {
        emit Inserted(_tree.insertMany(leaves));
    }

    function root() external view returns (uint256) {
        return _tree.root();
    }

    function size() external view returns (uint256) {
        return _tree.size;
    }

    function depth() external view returns (uint256) {
        return _tree.depth;
    }

    function isAccepted(uint256 root_, uint256 ordinal) external view returns (bool) {
        return _tree.isAccepted(root_, ordinal);
    }

    function ordinalOf(uint256 root_) external view returns (uint256) {
        return _tree.ordinalOf(root_);
    }
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title RootHistory
/// @notice The last `SIZE` roots of a tree in a ring buffer. A proof built against a root that has since been
///         replaced stays acceptable until `SIZE` newer roots have been recorded, so a tree update does not void
///         proofs in flight. Used for the pool's state roots and the entrypoint's ASP roots.
library RootHistory {
    uint256 internal constant SIZE = 64;

    struct Roots {
        uint256[SIZE] ring;
        // Number of roots ever recorded; the newest sits at ring[(count - 1) % SIZE].
        uint256 count;
    }

    function record(Roots storage self, uint256 root) internal {
        uint256 count = self.count;
        self.ring[count % SIZE] = root;
        self.count = count + 1;
    }

    /// @return The newest recorded root, or 0 when none has been recorded.
    function latest(Roots storage self) internal view returns (uint256) {
        uint256 count = self.count;
        return count == 0 ? 0 : self.ring[(count - 1) % SIZE];
    }

    /// @return Whether `root` is one of the last `SIZE` recorded roots. Zero, the value of an empty slot, never is.
    function contains(Roots storage self, uint256 root) internal view returns (bool) {
        if (root == 0) return false;
        uint256 count = self.count;
        uint256 window = count < SIZE ? count : SIZE;
        // Newest first: proofs are usually built against a recent root, so the scan stops early.
        for (uint256 age = 1; age <= window; ++age) {
            if (self.ring[(count - age) % SIZE] == root) return true;
        }
        return false;
    }
}

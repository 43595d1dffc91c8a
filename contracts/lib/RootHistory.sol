// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @dev How many of the latest roots a history accepts, whatever their age; shared with StateTree.
uint256 constant ROOT_HISTORY_SIZE = 64;

/// @title RootHistory
/// @notice The recorded roots of a tree, each with the depth of the tree it is the root of. A proof built against
///         a root that has since been replaced stays acceptable while the root is one of the last `SIZE` recorded
///         OR was recorded less than `MIN_LIFETIME_BLOCKS` blocks ago: any number of roots recorded in one block
///         (a flood of deposits) cannot evict a root a proof in flight uses. A revocation starts a new epoch:
///         every root recorded before it is refused from then on, except those carried into the epoch by `keep`.
///         Used for the entrypoint's ASP roots; the pool's state roots follow the same rule in StateTree, laid out
///         for an insert per withdrawal.
library RootHistory {
    uint256 internal constant SIZE = ROOT_HISTORY_SIZE;
    uint256 internal constant MIN_LIFETIME_BLOCKS = 128;

    struct Entry {
        // 1 + the number of roots recorded before this one; 0 for a root never recorded.
        uint64 ordinal;
        uint64 recordedAtBlock;
        uint64 epoch;
        uint8 depth;
    }

    struct Roots {
        mapping(uint256 root => Entry) entries;
        // Number of roots ever recorded.
        uint64 count;
        // Number of revocations so far; only roots of this epoch are accepted.
        uint64 epoch;
    }

    /// @dev A root recorded again (an ASP set that returns to an earlier content) takes its new place.
    function record(Roots storage self, uint256 root, uint256 depth) internal {
        uint64 ordinal = self.count + 1;
        self.count = ordinal;
        self.entries[root] = Entry(ordinal, uint64(block.number), self.epoch, uint8(depth));
    }

    /// @notice Refuses every root recorded so far, from now on.
    function revokeAll(Roots storage self) internal {
        ++self.epoch;
    }

    /// @notice Carries an accepted root of the previous epoch into the current one, after revokeAll.
    /// @return Whether the root was accepted in the previous epoch (only then is it kept).
    function keep(Roots storage self, uint256 root) internal returns (bool) {
        Entry storage entry = self.entries[root];
        if (!_accepted(entry, self.epoch - 1, self.count)) return false;
        entry.epoch = self.epoch;
        return true;
    }

    /// @return Whether `root` is accepted: recorded, in the current epoch, and recent by count or by block.
    ///         Zero, the root of no recorded tree, never is.
    function contains(Roots storage self, uint256 root) internal view returns (bool) {
        return root != 0 && _accepted(self.entries[root], self.epoch, self.count);
    }

    /// @return Whether `root` was recorded in an epoch that a revocation has since closed (and not kept).
    function isRevoked(Roots storage self, uint256 root) internal view returns (bool) {
        Entry storage entry = self.entries[root];
        return entry.ordinal != 0 && entry.epoch != self.epoch;
    }

    /// @return The depth recorded with `root` (0 for a root never recorded).
    function depthOf(Roots storage self, uint256 root) internal view returns (uint256) {
        return self.entries[root].depth;
    }

    function _accepted(Entry storage entry, uint64 epoch, uint256 count) private view returns (bool) {
        uint64 ordinal = entry.ordinal;
        if (ordinal == 0 || entry.epoch != epoch) return false;
        return count - ordinal < SIZE || block.number - entry.recordedAtBlock < MIN_LIFETIME_BLOCKS;
    }
}

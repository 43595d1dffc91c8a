// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {SNARK_SCALAR_FIELD} from "@zk-kit/lean-imt.sol/Constants.sol";
import {Poseidon2T3} from "./poseidon/Poseidon2T3.sol";
import {ROOT_HISTORY_SIZE, RootHistory} from "./RootHistory.sol";

/// @title StateTree
/// @notice The pool's state tree: an insert-only LeanIMT (zk-kit's tree, the same roots) with the history of its
///         recent roots, laid out so that an insert writes only slots that already hold a value.
///
///         Roots: the root of the tree with n leaves is its n-th root (its ordinal, n). It is kept in a ring of
///         RootHistory.SIZE slots at roots[n % SIZE], filled with a placeholder at construction, so recording a
///         root rewrites a slot (~5k gas) instead of writing a fresh one (~22k). A root stays accepted while it is
///         one of the last SIZE (in the ring) or was recorded less than MIN_LIFETIME_BLOCKS blocks ago. For the
///         second rule, the tree counts its inserts per MIN_LIFETIME_BLOCKS-block window in the slot it rewrites
///         anyway: while the current and the previous window hold fewer than SIZE inserts, the root leaving the ring
///         is older than MIN_LIFETIME_BLOCKS blocks; otherwise (a flood of inserts) it may be younger, and it is
///         kept in `evicted` until MIN_LIFETIME_BLOCKS blocks after it left the ring.
///
///         Callers name the ordinal of the root they use, so a lookup reads one slot; a tree's depth follows from
///         its size, so no depth is stored with a root. No index of leaves is kept: membership is proven with a path
///         (`rootOfPath`).
library StateTree {
    uint256 internal constant SIZE = ROOT_HISTORY_SIZE;
    uint256 internal constant MIN_LIFETIME_BLOCKS = RootHistory.MIN_LIFETIME_BLOCKS;
    /// @dev What the ring holds where no root is: not a field element, so never a root.
    uint256 private constant PLACEHOLDER = type(uint256).max;

    struct Data {
        // Number of leaves: the ordinal of the current root. With the next four fields, one slot.
        uint64 size;
        // Depth of the tree, grown by one when an insert does not fit.
        uint8 depth;
        // block.number / MIN_LIFETIME_BLOCKS at the last insert, and the inserts in that window and in the one
        // before it (0 when that one is not the window just before).
        uint32 window;
        uint32 windowInserts;
        uint32 previousWindowInserts;
        // Per level, the node at the last even position, the left sibling a later insert hashes with.
        mapping(uint256 level => uint256 node) sideNodes;
        // roots[n % SIZE]: the root of the tree with n leaves, for the last SIZE values of n.
        uint256[ROOT_HISTORY_SIZE] roots;
        // Roots that left the ring while they may have been younger than MIN_LIFETIME_BLOCKS blocks.
        mapping(uint256 root => Evicted) evicted;
    }

    struct Evicted {
        uint64 ordinal;
        uint64 evictedAtBlock;
    }

    error LeafGreaterThanSnarkScalarField();
    error LeafCannotBeZero();
    error BatchSizeOutOfRange();

    /// @notice Fills the ring with the placeholder, so that no insert pays for a first write.
    function initialize(Data storage self) internal {
        for (uint256 i; i < SIZE; ++i) {
            self.roots[i] = PLACEHOLDER;
        }
    }

    /// @return node The root of the tree with `leaf` appended.
    function insert(Data storage self, uint256 leaf) internal returns (uint256 node) {
        _checkLeaf(leaf);
        uint64 index = self.size;
        uint8 depth = _grow(self, index, index + 1);

        node = leaf;
        for (uint256 level; level < depth; ++level) {
            if ((index >> level) & 1 == 1) node = _hash(self.sideNodes[level], node);
            else self.sideNodes[level] = node;
        }
        _recordRoot(self, index + 1, depth, node);
    }

    /// @notice Appends `leaves` in order, hashing each node of the levels they change once (about one hash per
    ///         leaf plus one per level, against about half the depth per leaf for one insert at a time).
    ///      At most SIZE leaves at once, so that the ring keeps the roots before the batch it does not replace.
    /// @return The root of the tree with every leaf appended; the roots in between are never formed.
    function insertMany(Data storage self, uint256[] memory leaves) internal returns (uint256) {
        uint256 count = leaves.length;
        if (count == 0 || count > SIZE) revert BatchSizeOutOfRange();
        // nodes[j] is the node at position first + j of the current level; parents overwrite it in place.
        uint256[] memory nodes = new uint256[](count);
        for (uint256 i; i < count; ++i) {
            _checkLeaf(leaves[i]);
            nodes[i] = leaves[i];
        }
        uint64 start = self.size;
        uint64 end = start + uint64(count);
        uint8 depth = _grow(self, start, end);

        uint256 first = start;
        uint256 last = end - 1;
        for (uint256 level; level < depth; ++level) {
            _hashLevel(self, nodes, level, first, last);
            (first, last) = (first >> 1, last >> 1);
        }
        _recordRoot(self, end, depth, nodes[0]);
        return nodes[0];
    }

    /// @return The current root, 0 while the tree is empty.
    function root(Data storage self) internal view returns (uint256) {
        uint64 size = self.size;
        return size == 0 ? 0 : self.roots[size % SIZE];
    }

    /// @return Whether `root_` is the root of the tree with `ordinal` leaves and is still accepted: in the ring
    ///         (one of the last SIZE roots) or evicted less than MIN_LIFETIME_BLOCKS blocks ago.
    function isAccepted(Data storage self, uint256 root_, uint256 ordinal) internal view returns (bool) {
        uint256 size = self.size;
        if (root_ == 0 || root_ >= SNARK_SCALAR_FIELD || ordinal == 0 || ordinal > size) return false;
        if (size - ordinal < SIZE) return self.roots[ordinal % SIZE] == root_;
        Evicted storage entry = self.evicted[root_];
        return entry.ordinal == ordinal && block.number - entry.evictedAtBlock < MIN_LIFETIME_BLOCKS;
    }

    /// @return The ordinal of `root_` if it is accepted, else 0. Reads up to SIZE slots: for views, not for
    ///         transactions, which name the ordinal.
    function ordinalOf(Data storage self, uint256 root_) internal view returns (uint256) {
        uint256 size = self.size;
        if (root_ == 0 || root_ >= SNARK_SCALAR_FIELD) return 0;
        for (uint256 back; back < SIZE && back < size; ++back) {
            if (self.roots[(size - back) % SIZE] == root_) return size - back;
        }
        Evicted storage entry = self.evicted[root_];
        return isAccepted(self, root_, entry.ordinal) ? entry.ordinal : 0;
    }

    /// @return The depth of a LeanIMT with `size` leaves: the least d with 2^d >= size.
    function depthFor(uint256 size) internal pure returns (uint256) {
        return size <= 1 ? 0 : Math.log2(size - 1) + 1;
    }

    /// @notice The root a LeanIMT path leads to: `siblings[level]` is the sibling at each level below the tree's
    ///         depth, 0 where the node has none (it is promoted), as the circuit reads a path.
    function rootOfPath(uint256 leaf, uint256 index, uint256[] calldata siblings) internal pure returns (uint256 node) {
        node = leaf;
        for (uint256 level; level < siblings.length; ++level) {
            uint256 sibling = siblings[level];
            if ((index >> level) & 1 == 1) node = _hash(sibling, node);
            else if (sibling != 0) node = _hash(node, sibling);
        }
    }

    /// @dev One level of insertMany: `nodes` holds the level's positions first..last, which this batch formed; it
    ///      keeps the node at the last even position as the level's side node and puts the parents in `nodes`.
    function _hashLevel(Data storage self, uint256[] memory nodes, uint256 level, uint256 first, uint256 last) private {
        // Read before the parents overwrite `nodes`, written after the old side node served as a left sibling.
        uint256 kept = last & ~uint256(1);
        uint256 keptNode = kept >= first ? nodes[kept - first] : 0;
        uint256 parentFirst = first >> 1;
        for (uint256 parent = parentFirst; parent <= last >> 1; ++parent) {
            uint256 left = 2 * parent;
            uint256 leftNode = left >= first ? nodes[left - first] : self.sideNodes[level];
            nodes[parent - parentFirst] = left + 1 <= last ? _hash(leftNode, nodes[left + 1 - first]) : leftNode;
        }
        if (keptNode != 0) self.sideNodes[level] = keptNode;
    }

    /// @dev Grows the depth to fit leaf positions [start, end). A full tree's root becomes the left sibling at its
    ///      old top level, the one node of that level a later insert hashes with.
    function _grow(Data storage self, uint64 start, uint64 end) private returns (uint8 depth) {
        depth = self.depth;
        if (1 << depth >= end) return depth;
        if (start != 0 && 1 << depth == start) self.sideNodes[depth] = self.roots[start % SIZE];
        while (1 << depth < end) ++depth;
    }

    /// @dev Records the root of the tree with `size` leaves, which `size - self.size` inserts made, in the ring. The
    ///      slots of the ordinals in between get the placeholder: those roots were never formed. A root leaving the
    ///      ring while a flood of inserts may have recorded it less than MIN_LIFETIME_BLOCKS blocks ago is kept in
    ///      `evicted`. Size, depth and the window counts are written in their one slot.
    function _recordRoot(Data storage self, uint64 size, uint8 depth, uint256 newRoot) private {
        uint64 previousSize = self.size;
        bool flood = _countInserts(self, size - previousSize);
        for (uint64 ordinal = previousSize + 1; ordinal <= size; ++ordinal) {
            uint256 slot = ordinal % SIZE;
            if (flood && ordinal > SIZE) {
                uint256 leaving = self.roots[slot];
                if (leaving != PLACEHOLDER) self.evicted[leaving] = Evicted(ordinal - uint64(SIZE), uint64(block.number));
            }
            self.roots[slot] = ordinal == size ? newRoot : PLACEHOLDER;
        }
        (self.size, self.depth) = (size, depth);
    }

    /// @dev Counts `inserts` in the current window. Returns whether the current and the previous window hold SIZE
    ///      inserts or more: only then can a root leaving the ring be younger than MIN_LIFETIME_BLOCKS blocks.
    function _countInserts(Data storage self, uint64 inserts) private returns (bool flood) {
        uint32 window = uint32(block.number / MIN_LIFETIME_BLOCKS);
        uint32 windowInserts = self.windowInserts;
        uint32 previousWindowInserts = self.previousWindowInserts;
        if (window != self.window) {
            previousWindowInserts = window == self.window + 1 ? windowInserts : 0;
            windowInserts = 0;
        }
        windowInserts += uint32(inserts);
        (self.window, self.windowInserts, self.previousWindowInserts) = (window, windowInserts, previousWindowInserts);
        return uint256(windowInserts) + previousWindowInserts >= SIZE;
    }

    function _checkLeaf(uint256 leaf) private pure {
        if (leaf >= SNARK_SCALAR_FIELD) revert LeafGreaterThanSnarkScalarField();
        if (leaf == 0) revert LeafCannotBeZero();
    }

    function _hash(uint256 left, uint256 right) private pure returns (uint256) {
        return Poseidon2T3.hash(left, right);
    }
}

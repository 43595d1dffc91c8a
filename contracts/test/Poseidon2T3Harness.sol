// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Poseidon2T3} from "../lib/poseidon/Poseidon2T3.sol";
import {PoseidonT3} from "../lib/poseidon/PoseidonT3.sol";

/// @title Poseidon2T3Harness
/// @notice Exposes the internal Poseidon2T3.hash to tests, and measures it next to the linked PoseidonT3 the state
///         tree hashes with today, both as the gas between two gasleft() readings around one hash.
contract Poseidon2T3Harness {
    function hash(uint256 left, uint256 right) external pure returns (uint256) {
        return Poseidon2T3.hash(left, right);
    }

    function gasOfHash(uint256 left, uint256 right) external view returns (uint256 digest, uint256 gasUsed) {
        uint256 before = gasleft();
        digest = Poseidon2T3.hash(left, right);
        gasUsed = before - gasleft();
    }

    /// @dev The first call warms the library's account, as in an insert, which hashes at every level.
    function gasOfPoseidonT3(uint256 left, uint256 right) external view returns (uint256 digest, uint256 gasUsed) {
        PoseidonT3.hash(left, right);
        uint256 before = gasleft();
        digest = PoseidonT3.hash(left, right);
        gasUsed = before - gasleft();
    }
}

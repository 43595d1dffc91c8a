// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {WithdrawalVerifier} from "../verifiers/WithdrawalVerifier.sol";

/// @notice Exposes the inlined WithdrawalVerifier library to tests and benches: the verifier alone, without the pool.
contract WithdrawalVerifierHarness {
    function verifyProof(
        uint256[2] calldata pA,
        uint256[2][2] calldata pB,
        uint256[2] calldata pC,
        uint256[7] calldata pubSignals
    ) external view returns (bool) {
        return WithdrawalVerifier.verifyProof(pA, pB, pC, pubSignals);
    }
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title Multicall3
/// @notice The one function of Multicall3 that x402's batch-settlement code calls (`tryAggregate`), for a local chain
///         that has no Multicall3 at its usual address (x402-peers/batch-settlement.ts places it there).
contract Multicall3 {
    struct Call {
        address target;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    /// @notice A call failed while `requireSuccess` was set.
    error CallFailed(uint256 index);

    function tryAggregate(bool requireSuccess, Call[] calldata calls) external payable returns (Result[] memory results) {
        results = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory returnData) = calls[i].target.call(calls[i].callData);
            if (requireSuccess && !success) revert CallFailed(i);
            results[i] = Result(success, returnData);
        }
    }
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title Forwarder
/// @notice Test-only: makes calls to other contracts in one transaction, as any contract may. The exploit tests send
///         a copy of the relayer's relay calldata through it (the transaction then calls no entrypoint, and only
///         the chain's events tell what it did), and pay two notes' access fees in one transaction.
contract Forwarder {
    /// @notice The call at `index` reverted with `reason`; nothing of the transaction stands.
    error CallFailed(uint256 index, bytes reason);

    /// @notice Calls each of `targets` with the data at the same position, in order, as this contract.
    function forward(address[] calldata targets, bytes[] calldata data) external {
        for (uint256 i; i < targets.length; ++i) {
            (bool ok, bytes memory reason) = targets[i].call(data[i]);
            if (!ok) revert CallFailed(i, reason);
        }
    }
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title CallForwarder
/// @notice Test-only: sends any calldata to any contract and bubbles up its revert, as a stranger who copies a relay's
///         calldata and sends it through a contract of its own would.
contract CallForwarder {
    function forward(address target, bytes calldata data) external {
        (bool ok, bytes memory returned) = target.call(data);
        if (!ok) {
            assembly {
                revert(add(returned, 32), mload(returned))
            }
        }
    }
}

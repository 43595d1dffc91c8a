// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @title TabPayer
/// @notice The payer of one private tab's batch-settlement channel: everything the channel gives back (the seller's
///         refund, a timed withdrawal) comes here and nowhere else. It has no key: each tab's is a minimal clone of the
///         one the entrypoint deployed, at the entrypoint's CREATE2 address salted by the tab's origin nullifier hash
///         (Entrypoint.tabPayerOf), deployed only when something must leave it, and does only what the entrypoint tells
///         it, which is to start or finish the channel's withdrawal and to move what came back into the pool as the
///         agent's refund note. Its ENTRYPOINT is in the shared code, so every clone answers to the same entrypoint.
contract TabPayer {
    using SafeERC20 for IERC20;

    address private immutable ENTRYPOINT;

    /// @notice Only the entrypoint that deployed this payer may make it act.
    error OnlyEntrypoint();

    constructor() {
        ENTRYPOINT = msg.sender;
    }

    /// @notice Sends `amount` of `token` to `to`.
    function pay(IERC20 token, address to, uint256 amount) external {
        if (msg.sender != ENTRYPOINT) revert OnlyEntrypoint();
        token.safeTransfer(to, amount);
    }

    /// @notice Calls `target` with `data` as this payer (the channel's payer side), bubbling up its revert.
    function act(address target, bytes calldata data) external {
        if (msg.sender != ENTRYPOINT) revert OnlyEntrypoint();
        (bool success, bytes memory returned) = target.call(data);
        if (!success) {
            assembly ("memory-safe") {
                revert(add(returned, 32), mload(returned))
            }
        }
    }
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IX402BatchSettlement
/// @notice What this project calls on x402's x402BatchSettlement (the scheme's published ABI): a channel's state, which
///         the entrypoint reads before a tab's refund, and the payer side's timed withdrawal, by which the relayer's
///         payer sweep takes back a private tab nobody drains (docs/design.md 13). The local chain's peer
///         (contracts/x402-peers/X402BatchSettlement.sol) implements it.
interface IX402BatchSettlement {
    /// @notice A channel's immutable terms; its id is their EIP-712 digest.
    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    /// @notice What the channel holds, and what its receiver claimed of it.
    function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed);

    /// @notice The payer side's pending withdrawal: its amount and when it was started (0: none).
    function pendingWithdrawals(bytes32 channelId) external view returns (uint128 amount, uint40 initiatedAt);

    /// @notice Starts the withdrawal of up to `amount` unclaimed; only the payer or its authorizer.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external;

    /// @notice After the withdraw delay, pays the payer the pending amount, capped to what is still unclaimed.
    function finalizeWithdraw(ChannelConfig calldata config) external;
}

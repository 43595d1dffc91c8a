// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IBatchSettlementPayerSide
/// @notice What the payer side of an x402 batch-settlement channel calls on x402BatchSettlement (the scheme's published
///         ABI): the channel's state and its timed withdrawal. The relayer's payer sweep uses it to take back a private
///         tab that nobody drains (docs/design.md 13).
interface IBatchSettlementPayerSide {
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

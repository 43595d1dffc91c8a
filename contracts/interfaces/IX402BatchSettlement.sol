// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IX402BatchSettlement
/// @notice What this project calls on x402's x402BatchSettlement (the scheme's published ABI): the deposit a private
///         tab's relay makes, a channel's id and state, which the entrypoint reads before a tab's refund, and the payer
///         side's timed withdrawal, by which anyone takes back a private tab nobody drains (docs/design.md 13). The
///         local chain's peer (contracts/x402-peers/X402BatchSettlement.sol) implements it.
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

    /// @notice Moves `amount` from the config's payer into the channel through `collector`, which must deliver it.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external;

    /// @notice The channel's id: the EIP-712 digest of `config` under the contract's domain.
    function getChannelId(ChannelConfig calldata config) external view returns (bytes32);

    /// @notice What the channel holds, and what its receiver claimed of it.
    function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed);

    /// @notice The payer side's pending withdrawal: its amount and when it was started (0: none).
    function pendingWithdrawals(bytes32 channelId) external view returns (uint128 amount, uint40 initiatedAt);

    /// @notice Starts the withdrawal of up to `amount` unclaimed; only the payer or its authorizer.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external;

    /// @notice After the withdraw delay, pays the payer the pending amount, capped to what is still unclaimed.
    function finalizeWithdraw(ChannelConfig calldata config) external;
}

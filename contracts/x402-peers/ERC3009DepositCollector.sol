// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IEIP3009} from "../interfaces/IEIP3009.sol";
import {IDepositCollector} from "../interfaces/IDepositCollector.sol";

/// @title ERC3009DepositCollector
/// @notice Test peer of x402's ERC-3009 deposit collector, written to the batch-settlement scheme's published spec and
///         the calldata x402's EVM package (2.27) builds: a payer's `ReceiveWithAuthorization` to this collector,
///         whose nonce is `keccak256(abi.encode(channelId, salt))`, funds exactly that channel. It lives only at the
///         address that package expects, on a local chain (x402-peers/batch-settlement.ts); never deploy it elsewhere.
contract ERC3009DepositCollector is IDepositCollector {
    using SafeERC20 for IERC20;

    /// @notice Where x402's EVM package expects x402BatchSettlement; the only caller this collector serves.
    address public constant BATCH_SETTLEMENT = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

    /// @notice The caller is not x402BatchSettlement: a signed authorization would otherwise pay whoever presents it.
    error CallerNotSettlement();

    /// @param collectorData `abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt, bytes signature)`.
    function collect(address payer, IERC20 token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external
    {
        if (msg.sender != BATCH_SETTLEMENT) revert CallerNotSettlement();
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(collectorData, (uint256, uint256, uint256, bytes));
        IEIP3009(address(token)).receiveWithAuthorization(
            payer, address(this), amount, validAfter, validBefore, keccak256(abi.encode(channelId, salt)), signature
        );
        token.safeTransfer(msg.sender, amount);
    }
}

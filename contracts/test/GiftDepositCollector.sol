// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IDepositCollector} from "../interfaces/IDepositCollector.sol";

/// @title GiftDepositCollector
/// @notice A deposit collector that pays from its own balance, not the payer's: how a stranger funds someone else's
///         X402BatchSettlement channel (the contract accepts any collector that delivers the amount).
contract GiftDepositCollector is IDepositCollector {
    using SafeERC20 for IERC20;

    function collect(address, IERC20 token, uint256 amount, bytes32, bytes calldata) external {
        token.safeTransfer(msg.sender, amount);
    }
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IDepositCollector} from "../interfaces/IDepositCollector.sol";

/// @title IdleDepositCollector
/// @notice A deposit collector that delivers nothing, for X402BatchSettlement's check that a deposit arrived.
contract IdleDepositCollector is IDepositCollector {
    function collect(address, IERC20, uint256, bytes32, bytes calldata) external {}
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

/// @title IDepositCollector
/// @notice How X402BatchSettlement pulls a deposit: the collector takes `amount` of `token` from `payer` under the
///         payer's authorization for `channelId` (in `collectorData`) and sends it to the caller.
interface IDepositCollector {
    function collect(address payer, IERC20 token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external;
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {IEntrypoint} from "./interfaces/IEntrypoint.sol";
import {IPrivacyPool} from "./interfaces/IPrivacyPool.sol";
import {ProofLib} from "./lib/ProofLib.sol";
import {RootHistory} from "./lib/RootHistory.sol";

/// @title Entrypoint
/// @notice Registry of one privacy pool per asset, deposits, relayed withdrawals with a relay fee, and the ASP root
///         history. DEFAULT_ADMIN_ROLE registers pools and manages roles; POSTMAN_ROLE publishes ASP roots.
contract Entrypoint is IEntrypoint, AccessControl, ReentrancyGuard {
    using SafeERC20 for IERC20;
    using RootHistory for RootHistory.Roots;
    using ProofLib for ProofLib.WithdrawProof;

    /// @inheritdoc IEntrypoint
    bytes32 public constant POSTMAN_ROLE = keccak256("POSTMAN_ROLE");
    /// @inheritdoc IEntrypoint
    uint256 public constant BPS_DENOMINATOR = 10_000;
    /// @inheritdoc IEntrypoint
    uint256 public constant ROOT_HISTORY_SIZE = RootHistory.SIZE;

    mapping(IERC20 asset => AssetConfig) private _assetConfigs;
    mapping(uint256 scope => IPrivacyPool) private _poolsByScope;
    RootHistory.Roots private _aspRoots;

    /// @param owner Receives DEFAULT_ADMIN_ROLE.
    /// @param postman Receives POSTMAN_ROLE.
    constructor(address owner, address postman) {
        if (owner == address(0) || postman == address(0)) revert ZeroAddress();
        _grantRole(DEFAULT_ADMIN_ROLE, owner);
        _grantRole(POSTMAN_ROLE, postman);
    }

    /*//////////////////////////////////////////////////////////////
                                 LOGIC
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IEntrypoint
    function registerPool(IERC20 asset, IPrivacyPool pool, uint256 minimumDepositAmount, uint256 maxRelayFeeBPS)
        external
        onlyRole(DEFAULT_ADMIN_ROLE)
    {
        if (address(asset) == address(0) || address(pool) == address(0)) revert ZeroAddress();
        if (address(_assetConfigs[asset].pool) != address(0)) revert AssetAlreadyRegistered();
        if (pool.ASSET() != asset) revert PoolAssetMismatch();
        if (maxRelayFeeBPS > BPS_DENOMINATOR) revert MaxRelayFeeAboveDenominator();

        uint256 scope = pool.SCOPE();
        _assetConfigs[asset] = AssetConfig(pool, minimumDepositAmount, maxRelayFeeBPS);
        _poolsByScope[scope] = pool;
        emit PoolRegistered(asset, pool, scope, minimumDepositAmount, maxRelayFeeBPS);
    }

    /// @inheritdoc IEntrypoint
    function deposit(IERC20 asset, uint256 value, uint256 precommitment)
        external
        nonReentrant
        returns (uint256 commitment)
    {
        AssetConfig storage config = _assetConfigs[asset];
        IPrivacyPool pool = config.pool;
        if (address(pool) == address(0)) revert AssetNotRegistered();
        if (value < config.minimumDepositAmount) revert DepositBelowMinimum();

        asset.safeTransferFrom(msg.sender, address(pool), value);
        commitment = pool.deposit(msg.sender, value, precommitment);
    }

    /// @inheritdoc IEntrypoint
    function relay(
        IPrivacyPool.Withdrawal calldata withdrawal,
        ProofLib.WithdrawProof calldata proof,
        uint256 scope
    ) external nonReentrant {
        if (withdrawal.processooor != address(this)) revert InvalidProcessooor();
        IPrivacyPool pool = _poolsByScope[scope];
        if (address(pool) == address(0)) revert UnknownScope();
        if (!_aspRoots.contains(proof.aspRoot())) revert UnknownAspRoot();
        IERC20 asset = pool.ASSET();
        RelayData memory relayData = abi.decode(withdrawal.data, (RelayData));
        if (relayData.relayFeeBPS > _assetConfigs[asset].maxRelayFeeBPS) revert RelayFeeAboveMaximum();

        pool.withdraw(withdrawal, proof);

        uint256 withdrawnValue = proof.withdrawnValue();
        uint256 feeAmount = withdrawnValue * relayData.relayFeeBPS / BPS_DENOMINATOR;
        asset.safeTransfer(relayData.recipient, withdrawnValue - feeAmount);
        if (feeAmount != 0) asset.safeTransfer(relayData.feeRecipient, feeAmount);
        emit WithdrawalRelayed(relayData.recipient, asset, relayData.feeRecipient, withdrawnValue, feeAmount);
    }

    /// @inheritdoc IEntrypoint
    function updateRoot(uint256 root, string calldata cid) external onlyRole(POSTMAN_ROLE) {
        if (root == 0) revert ZeroAspRoot();
        _aspRoots.record(root);
        emit RootUpdated(root, cid, block.timestamp);
    }

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IEntrypoint
    function assetConfig(IERC20 asset) external view returns (AssetConfig memory) {
        return _assetConfigs[asset];
    }

    /// @inheritdoc IEntrypoint
    function poolByScope(uint256 scope) external view returns (IPrivacyPool) {
        return _poolsByScope[scope];
    }

    /// @inheritdoc IEntrypoint
    function latestRoot() external view returns (uint256) {
        return _aspRoots.latest();
    }

    /// @inheritdoc IEntrypoint
    function isKnownAspRoot(uint256 root) external view returns (bool) {
        return _aspRoots.contains(root);
    }
}

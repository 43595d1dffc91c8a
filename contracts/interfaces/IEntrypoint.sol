// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ProofLib} from "../lib/ProofLib.sol";
import {IPrivacyPool} from "./IPrivacyPool.sol";

/// @title IEntrypoint
/// @notice The single entry to the privacy pools: a registry of one pool per asset, deposits, relayed withdrawals
///         that pay a recipient and a relay fee, and the history of ASP roots (DESIGN.md section 4).
interface IEntrypoint {
    /*//////////////////////////////////////////////////////////////
                                STRUCTS
    //////////////////////////////////////////////////////////////*/

    /// @notice How a relayed withdrawal is paid out; abi-encoded into IPrivacyPool.Withdrawal.data.
    /// @param recipient Receives the withdrawn value minus the fee.
    /// @param feeRecipient Receives withdrawnValue * relayFeeBPS / BPS_DENOMINATOR.
    /// @param relayFeeBPS The relay fee in basis points, at most the pool's maxRelayFeeBPS.
    struct RelayData {
        address recipient;
        address feeRecipient;
        uint256 relayFeeBPS;
    }

    /// @notice The registered pool of an asset and its limits.
    /// @param pool The asset's pool, or the zero address when the asset has none.
    /// @param minimumDepositAmount The smallest deposit accepted, in atomic units.
    /// @param maxRelayFeeBPS The highest relay fee a withdrawal may carry, in basis points.
    struct AssetConfig {
        IPrivacyPool pool;
        uint256 minimumDepositAmount;
        uint256 maxRelayFeeBPS;
    }

    /*//////////////////////////////////////////////////////////////
                                 EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice A pool was registered for an asset.
    /// @param asset The pooled asset.
    /// @param pool The pool.
    /// @param scope The pool's scope, under which relay finds it.
    /// @param minimumDepositAmount The smallest deposit accepted.
    /// @param maxRelayFeeBPS The highest relay fee accepted, in basis points.
    event PoolRegistered(
        IERC20 indexed asset,
        IPrivacyPool indexed pool,
        uint256 scope,
        uint256 minimumDepositAmount,
        uint256 maxRelayFeeBPS
    );

    /// @notice The postman published a new ASP root.
    /// @param root The root of the tree of approved labels.
    /// @param cid Where the tree's contents are published (an IPFS CID or a URL).
    /// @param timestamp The block timestamp of the update.
    event RootUpdated(uint256 root, string cid, uint256 timestamp);

    /// @notice A withdrawal was relayed and paid out.
    /// @param recipient Received withdrawnValue - feeAmount.
    /// @param asset The withdrawn asset.
    /// @param feeRecipient Received feeAmount.
    /// @param withdrawnValue The amount that left the pool.
    /// @param feeAmount The relay fee.
    event WithdrawalRelayed(
        address indexed recipient,
        IERC20 indexed asset,
        address feeRecipient,
        uint256 withdrawnValue,
        uint256 feeAmount
    );

    /*//////////////////////////////////////////////////////////////
                                 ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice An address argument is the zero address.
    error ZeroAddress();

    /// @notice The asset already has a pool.
    error AssetAlreadyRegistered();

    /// @notice The pool pools a different asset than the one it is registered for.
    error PoolAssetMismatch();

    /// @notice The maximum relay fee is above 100% (BPS_DENOMINATOR).
    error MaxRelayFeeAboveDenominator();

    /// @notice The asset has no registered pool.
    error AssetNotRegistered();

    /// @notice No registered pool has this scope.
    error UnknownScope();

    /// @notice The deposit is below the pool's minimum deposit amount.
    error DepositBelowMinimum();

    /// @notice The withdrawal's processooor is not this entrypoint.
    error InvalidProcessooor();

    /// @notice The proof's ASP root is not one of the last ROOT_HISTORY_SIZE ASP roots.
    error UnknownAspRoot();

    /// @notice The withdrawal's relay fee is above the pool's maxRelayFeeBPS.
    error RelayFeeAboveMaximum();

    /// @notice The ASP root to publish is zero.
    error ZeroAspRoot();

    /*//////////////////////////////////////////////////////////////
                                 LOGIC
    //////////////////////////////////////////////////////////////*/

    /// @notice Registers the pool of an asset.
    /// @dev Only DEFAULT_ADMIN_ROLE. One pool per asset, for good.
    /// @param asset The pooled asset; must equal pool.ASSET().
    /// @param pool The pool, whose ENTRYPOINT must be this contract to accept deposits.
    /// @param minimumDepositAmount The smallest deposit accepted, in atomic units.
    /// @param maxRelayFeeBPS The highest relay fee accepted, in basis points (at most BPS_DENOMINATOR).
    function registerPool(IERC20 asset, IPrivacyPool pool, uint256 minimumDepositAmount, uint256 maxRelayFeeBPS)
        external;

    /// @notice Deposits `value` of `asset` from the caller, who must have approved this contract, as a new note.
    /// @param asset The asset to deposit.
    /// @param value The amount, at least the pool's minimum deposit amount.
    /// @param precommitment Poseidon(nullifier, secret) of the new note.
    /// @return commitment The note's commitment; its label is in the pool's Deposited event.
    function deposit(IERC20 asset, uint256 value, uint256 precommitment) external returns (uint256 commitment);

    /// @notice Relays a withdrawal: the pool pays this contract, which pays the recipient and the relay fee.
    /// @dev Open to anyone: the proof's context binds recipient, fee recipient and fee, so a relayer cannot
    ///      redirect the funds. Pays fee = withdrawnValue * relayFeeBPS / BPS_DENOMINATOR to the fee recipient and
    ///      the rest to the recipient.
    /// @param withdrawal The withdrawal; processooor must be this contract, data abi.encode(RelayData).
    /// @param proof The Groth16 proof; its ASP root must be one of the last ROOT_HISTORY_SIZE ASP roots.
    /// @param scope The scope of the pool to withdraw from.
    function relay(
        IPrivacyPool.Withdrawal calldata withdrawal,
        ProofLib.WithdrawProof calldata proof,
        uint256 scope
    ) external;

    /// @notice Publishes a new ASP root.
    /// @dev Only POSTMAN_ROLE. Earlier roots stay acceptable until ROOT_HISTORY_SIZE newer ones are published.
    /// @param root The root of the tree of approved labels; not zero.
    /// @param cid Where the tree's contents are published.
    function updateRoot(uint256 root, string calldata cid) external;

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice The role allowed to publish ASP roots.
    function POSTMAN_ROLE() external view returns (bytes32);

    /// @notice Basis points in 100%.
    function BPS_DENOMINATOR() external view returns (uint256);

    /// @notice How many of the newest ASP roots a withdrawal proof may be built against.
    function ROOT_HISTORY_SIZE() external view returns (uint256);

    /// @notice The registered pool of `asset` and its limits (all zero when it has none).
    function assetConfig(IERC20 asset) external view returns (AssetConfig memory);

    /// @notice The registered pool with this scope, or the zero address.
    function poolByScope(uint256 scope) external view returns (IPrivacyPool);

    /// @notice The newest ASP root, or 0 before the first update.
    function latestRoot() external view returns (uint256);

    /// @notice Whether `root` is one of the last ROOT_HISTORY_SIZE ASP roots.
    function isKnownAspRoot(uint256 root) external view returns (bool);
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SNARK_SCALAR_FIELD} from "@zk-kit/lean-imt.sol/Constants.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IEIP3009} from "./interfaces/IEIP3009.sol";
import {IEntrypoint} from "./interfaces/IEntrypoint.sol";
import {IPrivacyPool} from "./interfaces/IPrivacyPool.sol";
import {IX402BatchSettlement} from "./interfaces/IX402BatchSettlement.sol";
import {ProofLib} from "./lib/ProofLib.sol";
import {RootHistory} from "./lib/RootHistory.sol";
import {SpendRecord} from "./lib/SpendRecord.sol";
import {TabPayer} from "./TabPayer.sol";

/// @title Entrypoint
/// @notice Registry of one privacy pool per asset, deposits, relayed withdrawals with a relay fee (paying a
///         recipient, authorizing an x402 seller's transfer from the pool, or opening a private tab), the ASP root
///         history, the return of unused payments as refund notes and access fees (paid from a wallet or by a
///         withdrawal proof). DEFAULT_ADMIN_ROLE registers pools, sets the access-fee treasury and manages roles;
///         POSTMAN_ROLE publishes and revokes ASP roots. No role moves an agent's money: what a payment leaves unused
///         comes back by calls anyone may make.
contract Entrypoint is IEntrypoint, AccessControl, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;
    using RootHistory for RootHistory.Roots;
    using ProofLib for ProofLib.WithdrawProof;

    /// @inheritdoc IEntrypoint
    bytes32 public constant POSTMAN_ROLE = keccak256("POSTMAN_ROLE");
    /// @inheritdoc IEntrypoint
    uint256 public constant MAX_TREE_DEPTH = 32;
    /// @inheritdoc IEntrypoint
    uint256 public constant MAX_BATCH_SIZE = 16;
    /// @inheritdoc IEntrypoint
    uint256 public constant BPS_DENOMINATOR = 10_000;
    /// @inheritdoc IEntrypoint
    uint256 public constant ROOT_HISTORY_SIZE = RootHistory.SIZE;
    /// @inheritdoc IEntrypoint
    uint256 public constant ROOT_MIN_LIFETIME_BLOCKS = RootHistory.MIN_LIFETIME_BLOCKS;

    /// @inheritdoc IEntrypoint
    uint256 public constant MAX_TAB_WITHDRAW_DELAY = 7 days;

    /// @dev Where x402 deploys x402BatchSettlement on every chain: a private tab's channel lives there.
    IX402BatchSettlement private constant BATCH_SETTLEMENT =
        IX402BatchSettlement(0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003);
    /// @dev The code every tab's payer runs: each is a minimal clone of it (EIP-1167, about 41k gas to deploy where the
    ///      whole contract would take over 200k), at a CREATE2 address of this contract salted by its origin.
    TabPayer private immutable TAB_PAYER_IMPLEMENTATION;

    /// @dev abi.encode(RelayData): three static words.
    uint256 private constant RELAY_DATA_LENGTH = 96;
    /// @dev abi.encode(SellerPayment): six static words.
    uint256 private constant SELLER_PAYMENT_LENGTH = 192;
    /// @dev abi.encode(PoolAuthorization): seven static words.
    uint256 private constant POOL_AUTHORIZATION_LENGTH = 224;
    /// @dev keccak256("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)")
    bytes32 private constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH =
        0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267;
    /// @dev abi.encode(TabOpening): ten static words (the channel's seven, then three).
    uint256 private constant TAB_OPENING_LENGTH = 320;
    /// @dev abi.encode(AccessFeeData): two static words. Neither kind of data has the other's length, so a proof made
    ///      for one call is refused by the other instead of being read as its kind.
    uint256 private constant ACCESS_FEE_DATA_LENGTH = 64;

    /// @inheritdoc IEntrypoint
    address public accessFeeTreasury;
    mapping(IERC20 asset => AssetConfig) private _assetConfigs;
    mapping(uint256 scope => RelayTarget) private _relayTargets;
    RootHistory.Roots private _aspRoots;
    uint256 private _latestAspRoot;
    /// @dev keccak256(payer, amount) of the deposit a tab's relay is making, for `collect`, within that call only.
    bytes32 private transient _pendingDeposit;

    /// @dev What a relay needs of its scope's pool in one slot: the pool and its asset's maxRelayFeeBPS (at most
    ///      BPS_DENOMINATOR), copied from the asset's config, which never changes once registered.
    struct RelayTarget {
        IPrivacyPool pool;
        uint96 maxRelayFeeBPS;
    }

    /// @param owner Receives DEFAULT_ADMIN_ROLE.
    /// @param postman Receives POSTMAN_ROLE.
    constructor(address owner, address postman) {
        if (owner == address(0) || postman == address(0)) revert ZeroAddress();
        _grantRole(DEFAULT_ADMIN_ROLE, owner);
        _grantRole(POSTMAN_ROLE, postman);
        TAB_PAYER_IMPLEMENTATION = new TabPayer();
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
        _relayTargets[scope] = RelayTarget(pool, uint96(maxRelayFeeBPS));
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
        uint256 scope,
        uint256 stateTreeSize
    ) external nonReentrant {
        RelayTarget memory target = _relayTarget(scope);
        if (withdrawal.data.length == TAB_OPENING_LENGTH) return _openTab(withdrawal, proof, scope, stateTreeSize, target);
        target.pool.withdraw(proof, stateTreeSize, _payout(withdrawal, proof, scope, target));
    }

    /// @inheritdoc IEntrypoint
    function relayBatch(
        IPrivacyPool.Withdrawal[] calldata withdrawals,
        ProofLib.WithdrawProof[] calldata proofs,
        uint256 scope,
        uint256[] calldata stateTreeSizes
    ) external nonReentrant {
        uint256 count = withdrawals.length;
        if (count == 0 || count > MAX_BATCH_SIZE || proofs.length != count || stateTreeSizes.length != count) {
            revert BatchSizeOutOfRange();
        }
        RelayTarget memory target = _relayTarget(scope);
        IPrivacyPool.Payout[] memory payouts = new IPrivacyPool.Payout[](count);
        for (uint256 i; i < count; ++i) {
            payouts[i] = _payout(withdrawals[i], proofs[i], scope, target);
        }
        target.pool.withdrawBatch(proofs, stateTreeSizes, payouts);
    }

    /// @inheritdoc IEntrypoint
    function relayAccessFee(
        IPrivacyPool.Withdrawal calldata withdrawal,
        ProofLib.WithdrawProof calldata proof,
        uint256 scope,
        uint256 stateTreeSize
    ) external nonReentrant {
        IPrivacyPool pool = _relayTarget(scope).pool;
        _checkProcessing(withdrawal, proof);
        if (withdrawal.data.length != ACCESS_FEE_DATA_LENGTH) revert InvalidWithdrawalData();
        AccessFeeData memory data = abi.decode(withdrawal.data, (AccessFeeData));
        address treasury = accessFeeTreasury;
        if (treasury == address(0)) revert AccessFeeTreasuryNotSet();
        if (data.treasury != treasury) revert AccessFeeTreasuryMismatch();
        // No relay fee: the whole withdrawn value is the fee, and the refund anchor is never used.
        if (proof.relayFeeBPS() != 0) revert RelayFeeMismatch();
        _checkContext(withdrawal, proof, scope);
        uint256 withdrawnValue = proof.withdrawnValue();
        if (withdrawnValue == 0) revert ZeroAccessFee();

        pool.withdraw(proof, stateTreeSize, IPrivacyPool.Payout(treasury, address(0), 0, SpendRecord.PLAIN));
        emit AccessFeePaid(address(pool), data.nullifierHash, pool.ASSET(), withdrawnValue, treasury);
    }

    /// @inheritdoc IEntrypoint
    function updateRoot(uint256 root, uint256 depth, string calldata cid) external onlyRole(POSTMAN_ROLE) {
        _publishRoot(root, depth, cid, false);
    }

    /// @inheritdoc IEntrypoint
    function revokeAndUpdateRoot(uint256 root, uint256 depth, string calldata cid, uint256[] calldata keptRoots)
        external
        onlyRole(POSTMAN_ROLE)
    {
        _aspRoots.revokeAll();
        for (uint256 i; i < keptRoots.length; ++i) {
            if (!_aspRoots.keep(keptRoots[i])) revert KeptRootNotAccepted(keptRoots[i]);
        }
        emit AspRootsRevoked(keptRoots);
        if (root != 0) return _publishRoot(root, depth, cid, true);
        // The empty set: nothing new to accept.
        _latestAspRoot = 0;
        emit RootUpdated(0, 0, cid, block.timestamp, true);
    }

    /// @inheritdoc IEntrypoint
    function refundAuthorization(
        IERC20 asset,
        uint256 originNullifierHash,
        AuthorizedTransfer calldata transfer,
        uint256 refundAnchor
    ) external nonReentrant returns (uint256 commitment) {
        IPrivacyPool pool = _poolOf(asset);
        if (block.timestamp < transfer.validBefore) revert PaymentNotExpired();
        bytes32 nonce = bytes32(originNullifierHash);
        if (IEIP3009(address(asset)).authorizationState(address(pool), nonce)) revert PaymentAlreadyUsed();
        bytes32 digest = _transferDigest(asset, address(pool), transfer, nonce);
        commitment = pool.depositRefund(originNullifierHash, SpendRecord.authorized(digest, refundAnchor), transfer.value, refundAnchor);
        emit RefundDeposited(address(pool), commitment, originNullifierHash, transfer.value);
    }

    /// @inheritdoc IEntrypoint
    function withdrawTab(IERC20 asset, uint256 originNullifierHash, TabRecord calldata tab) external nonReentrant {
        IPrivacyPool pool = _poolOf(asset);
        if (block.timestamp < tab.reclaimableAfter) revert TabStillOpen();
        if (pool.spendRecordOf(originNullifierHash) != keccak256(abi.encode(tab))) revert TabNotRecorded();
        bytes32 channelId = BATCH_SETTLEMENT.getChannelId(tab.channel);
        (, uint40 initiatedAt) = BATCH_SETTLEMENT.pendingWithdrawals(channelId);
        bytes memory call;
        if (initiatedAt != 0) {
            call = abi.encodeCall(IX402BatchSettlement.finalizeWithdraw, (tab.channel));
        } else {
            (uint128 balance, uint128 totalClaimed) = BATCH_SETTLEMENT.channels(channelId);
            call = abi.encodeCall(IX402BatchSettlement.initiateWithdraw, (tab.channel, balance - totalClaimed));
        }
        _deployedTabPayer(originNullifierHash).act(address(BATCH_SETTLEMENT), call);
    }

    /// @inheritdoc IEntrypoint
    function returnTab(IERC20 asset, uint256 originNullifierHash, TabRecord calldata tab)
        external
        nonReentrant
        returns (uint256 commitment)
    {
        IPrivacyPool pool = _poolOf(asset);
        (, uint128 totalClaimed) = BATCH_SETTLEMENT.channels(BATCH_SETTLEMENT.getChannelId(tab.channel));
        if (totalClaimed >= tab.deposit) revert TabFullyClaimed();
        uint256 rest = tab.deposit - totalClaimed;
        address payer = tabPayerOf(originNullifierHash);
        if (asset.balanceOf(payer) < rest) revert TabRestNotReturned();
        commitment = pool.depositRefund(originNullifierHash, keccak256(abi.encode(tab)), rest, tab.refundAnchor);
        _deployedTabPayer(originNullifierHash).pay(asset, address(pool), rest);
        emit RefundDeposited(payer, commitment, originNullifierHash, rest);
    }

    /// @notice x402BatchSettlement's deposit collector for a tab's relay: delivers the deposit the relay just took out
    ///         of the pool. NotDepositing at any other time or for any other caller, payer or amount.
    /// @dev Not nonReentrant: x402BatchSettlement calls it from within the relay that set `_pendingDeposit`.
    function collect(address payer, IERC20 token, uint256 amount, bytes32, bytes calldata) external {
        if (msg.sender != address(BATCH_SETTLEMENT) || _pendingDeposit != keccak256(abi.encode(payer, amount))) {
            revert NotDepositing();
        }
        _pendingDeposit = 0;
        token.safeTransfer(msg.sender, amount);
    }

    /// @inheritdoc IEntrypoint
    function payAccessFee(IERC20 asset, uint256 nullifierHash, uint256 amount) external nonReentrant {
        address treasury = accessFeeTreasury;
        if (treasury == address(0)) revert AccessFeeTreasuryNotSet();
        if (address(_assetConfigs[asset].pool) == address(0)) revert AssetNotRegistered();
        if (amount == 0) revert ZeroAccessFee();

        asset.safeTransferFrom(msg.sender, treasury, amount);
        emit AccessFeePaid(msg.sender, nullifierHash, asset, amount, treasury);
    }

    /// @inheritdoc IEntrypoint
    function setAccessFeeTreasury(address treasury) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (treasury == address(0)) revert ZeroAddress();
        accessFeeTreasury = treasury;
        emit AccessFeeTreasuryUpdated(treasury);
    }

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IEntrypoint
    function tabPayerOf(uint256 originNullifierHash) public view returns (address) {
        return Clones.predictDeterministicAddress(address(TAB_PAYER_IMPLEMENTATION), bytes32(originNullifierHash));
    }

    /// @inheritdoc IEntrypoint
    function assetConfig(IERC20 asset) external view returns (AssetConfig memory) {
        return _assetConfigs[asset];
    }

    /// @inheritdoc IEntrypoint
    function poolByScope(uint256 scope) external view returns (IPrivacyPool) {
        return _relayTargets[scope].pool;
    }

    /// @inheritdoc IEntrypoint
    function latestRoot() external view returns (uint256) {
        return _latestAspRoot;
    }

    /// @inheritdoc IEntrypoint
    function isKnownAspRoot(uint256 root) external view returns (bool) {
        return _aspRoots.contains(root);
    }

    /// @inheritdoc IEntrypoint
    function isRevokedAspRoot(uint256 root) external view returns (bool) {
        return _aspRoots.isRevoked(root);
    }

    /// @inheritdoc IEntrypoint
    function aspTreeDepthAt(uint256 root) external view returns (uint256) {
        return _aspRoots.depthOf(root);
    }

    /*//////////////////////////////////////////////////////////////
                                INTERNAL
    //////////////////////////////////////////////////////////////*/

    function _poolOf(IERC20 asset) private view returns (IPrivacyPool pool) {
        pool = _assetConfigs[asset].pool;
        if (address(pool) == address(0)) revert AssetNotRegistered();
    }

    /// @dev The tab's payer, deployed now if nothing had to leave it before.
    function _deployedTabPayer(uint256 originNullifierHash) private returns (TabPayer) {
        address payer = tabPayerOf(originNullifierHash);
        if (payer.code.length != 0) return TabPayer(payer);
        return TabPayer(Clones.cloneDeterministic(address(TAB_PAYER_IMPLEMENTATION), bytes32(originNullifierHash)));
    }

    /// @dev A TabOpening's relay: the pool pays the deposit (and accrues the fee) to this contract, which x402's
    ///      batch-settlement then collects into the channel, whose payer is the note's own TabPayer.
    function _openTab(
        IPrivacyPool.Withdrawal calldata withdrawal,
        ProofLib.WithdrawProof calldata proof,
        uint256 scope,
        uint256 stateTreeSize,
        RelayTarget memory target
    ) private {
        _checkProcessing(withdrawal, proof);
        TabOpening memory opening = abi.decode(withdrawal.data, (TabOpening));
        uint256 feeAmount = _relayFee(opening.relayFeeBPS, proof, target.maxRelayFeeBPS);
        _checkContext(withdrawal, proof, scope);
        IX402BatchSettlement.ChannelConfig memory channel = opening.channel;
        if (channel.payer != tabPayerOf(proof.nullifierHash())) revert TabPayerMismatch();
        if (channel.token != address(target.pool.ASSET())) revert TabTokenMismatch();
        if (channel.withdrawDelay > MAX_TAB_WITHDRAW_DELAY) revert TabWithdrawDelayAboveMaximum();
        uint256 amount = proof.withdrawnValue() - feeAmount;
        bytes32 record = keccak256(abi.encode(TabRecord(channel, amount, opening.reclaimableAfter, proof.refundAnchor())));
        target.pool.withdraw(proof, stateTreeSize, IPrivacyPool.Payout(address(this), opening.feeRecipient, feeAmount, record));
        _pendingDeposit = keccak256(abi.encode(channel.payer, amount));
        BATCH_SETTLEMENT.deposit(channel, uint128(amount), address(this), "");
    }

    function _relayTarget(uint256 scope) private view returns (RelayTarget memory target) {
        target = _relayTargets[scope];
        if (address(target.pool) == address(0)) revert UnknownScope();
    }

    /// @dev What the entrypoint checks of a relayed withdrawal (its processing, its data's fee against the maximum and
    ///      the proof's, its context) and where its value goes, from its data: RelayData, a PoolAuthorization or a
    ///      SellerPayment. A TabOpening is relay's alone (_openTab): its deposit follows the spend in the same call.
    function _payout(
        IPrivacyPool.Withdrawal calldata withdrawal,
        ProofLib.WithdrawProof calldata proof,
        uint256 scope,
        RelayTarget memory target
    ) private view returns (IPrivacyPool.Payout memory) {
        _checkProcessing(withdrawal, proof);
        uint256 dataLength = withdrawal.data.length;
        if (dataLength == TAB_OPENING_LENGTH) revert TabOpeningNotBatched();
        if (dataLength == POOL_AUTHORIZATION_LENGTH) return _authorizationPayout(withdrawal, proof, scope, target);
        if (dataLength != RELAY_DATA_LENGTH) return _sellerPayout(withdrawal, proof, scope);
        RelayData memory relayData = abi.decode(withdrawal.data, (RelayData));
        uint256 feeAmount = _relayFee(relayData.relayFeeBPS, proof, target.maxRelayFeeBPS);
        _checkContext(withdrawal, proof, scope);
        return IPrivacyPool.Payout(relayData.recipient, relayData.feeRecipient, feeAmount, SpendRecord.PLAIN);
    }

    /// @dev An `exact` seller paid by the pool: the payout stays in the pool (recipient: the pool), whose spend record
    ///      of the note is then the one EIP-3009 transfer it authorizes, under the proof's refund anchor
    ///      (SpendRecord.authorized), which its ERC-1271 isValidSignature answers for and refundAuthorization returns.
    function _authorizationPayout(
        IPrivacyPool.Withdrawal calldata withdrawal,
        ProofLib.WithdrawProof calldata proof,
        uint256 scope,
        RelayTarget memory target
    ) private view returns (IPrivacyPool.Payout memory) {
        PoolAuthorization memory authorization = abi.decode(withdrawal.data, (PoolAuthorization));
        uint256 feeAmount = _relayFee(authorization.relayFeeBPS, proof, target.maxRelayFeeBPS);
        _checkContext(withdrawal, proof, scope);
        if (authorization.nonce != bytes32(proof.nullifierHash())) revert AuthorizationNonceMismatch();
        if (authorization.value != proof.withdrawnValue() - feeAmount) revert AuthorizationValueMismatch();
        if (block.timestamp >= authorization.validBefore) revert AuthorizationExpired();
        IPrivacyPool pool = target.pool;
        AuthorizedTransfer memory transfer =
            AuthorizedTransfer(authorization.payTo, authorization.value, authorization.validAfter, authorization.validBefore);
        bytes32 digest = _transferDigest(pool.ASSET(), address(pool), transfer, authorization.nonce);
        return IPrivacyPool.Payout(
            address(pool), authorization.feeRecipient, feeAmount, SpendRecord.authorized(digest, proof.refundAnchor())
        );
    }

    /// @dev The relay fee of a withdrawal whose data names `relayFeeBPS`: at most the pool's maximum, the proof's rate.
    function _relayFee(uint256 relayFeeBPS, ProofLib.WithdrawProof calldata proof, uint256 maxRelayFeeBPS)
        private
        pure
        returns (uint256)
    {
        if (relayFeeBPS > maxRelayFeeBPS) revert RelayFeeAboveMaximum();
        if (relayFeeBPS != proof.relayFeeBPS()) revert RelayFeeMismatch();
        return proof.withdrawnValue() * relayFeeBPS / BPS_DENOMINATOR;
    }

    /// @dev The EIP-712 digest the token checks for `transfer` under `nonce` as a TransferWithAuthorization from
    ///      `from`, under the token's own domain separator.
    function _transferDigest(IERC20 asset, address from, AuthorizedTransfer memory transfer, bytes32 nonce)
        private
        view
        returns (bytes32)
    {
        bytes32 structHash = keccak256(
            abi.encode(
                TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
                from,
                transfer.payTo,
                transfer.value,
                transfer.validAfter,
                transfer.validBefore,
                nonce
            )
        );
        return keccak256(abi.encodePacked("\x19\x01", IEIP3009(address(asset)).DOMAIN_SEPARATOR(), structHash));
    }

    /// @dev A seller's price paid straight to payTo: the withdrawn value is exactly amount + fee, the fee is no rate
    ///      (the proof's relayFeeBPS is 0, and its refund anchor never used), and the spend records the context.
    function _sellerPayout(IPrivacyPool.Withdrawal calldata withdrawal, ProofLib.WithdrawProof calldata proof, uint256 scope)
        private
        view
        returns (IPrivacyPool.Payout memory)
    {
        if (withdrawal.data.length != SELLER_PAYMENT_LENGTH) revert InvalidWithdrawalData();
        SellerPayment memory payment = abi.decode(withdrawal.data, (SellerPayment));
        if (block.timestamp >= payment.validBefore) revert SellerPaymentExpired();
        if (proof.relayFeeBPS() != 0) revert RelayFeeMismatch();
        if (proof.withdrawnValue() != payment.amount + payment.fee) revert SellerPaymentValueMismatch();
        _checkContext(withdrawal, proof, scope);
        return IPrivacyPool.Payout(payment.payTo, payment.feeRecipient, payment.fee, bytes32(proof.context()));
    }

    /// @dev What every withdrawal the entrypoint sends to a pool must show before its data is read (relay, relayBatch,
    ///      relayAccessFee): this entrypoint processes it, and its ASP root is accepted at the depth it was published with.
    function _checkProcessing(IPrivacyPool.Withdrawal calldata withdrawal, ProofLib.WithdrawProof calldata proof) private view {
        if (withdrawal.processooor != address(this)) revert InvalidProcessooor();
        uint256 aspRoot = proof.aspRoot();
        if (!_aspRoots.contains(aspRoot)) {
            if (_aspRoots.isRevoked(aspRoot)) revert AspRootRevoked();
            revert UnknownAspRoot();
        }
        if (proof.aspTreeDepth() != _aspRoots.depthOf(aspRoot)) revert AspTreeDepthMismatch();
    }

    /// @dev The proof is bound to this withdrawal (processooor and data) in this scope.
    function _checkContext(IPrivacyPool.Withdrawal calldata withdrawal, ProofLib.WithdrawProof calldata proof, uint256 scope)
        private
        pure
    {
        if (proof.context() != uint256(keccak256(abi.encode(withdrawal, scope))) % SNARK_SCALAR_FIELD) revert ContextMismatch();
    }

    function _publishRoot(uint256 root, uint256 depth, string calldata cid, bool revoking) private {
        if (root == 0) revert ZeroAspRoot();
        if (depth > MAX_TREE_DEPTH) revert AspTreeDepthAboveMaximum();
        _aspRoots.record(root, depth);
        _latestAspRoot = root;
        emit RootUpdated(root, depth, cid, block.timestamp, revoking);
    }
}

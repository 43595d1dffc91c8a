// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
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

/// @title Entrypoint
/// @notice Registry of one privacy pool per asset, deposits, relayed withdrawals with a relay fee, the ASP root
///         history, refunds and access fees (paid from a wallet or by a withdrawal proof). DEFAULT_ADMIN_ROLE registers
///         pools, sets the access-fee treasury and manages roles; POSTMAN_ROLE publishes and revokes ASP roots;
///         REFUNDER_ROLE returns unused payments.
contract Entrypoint is IEntrypoint, AccessControl, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;
    using RootHistory for RootHistory.Roots;
    using ProofLib for ProofLib.WithdrawProof;

    /// @inheritdoc IEntrypoint
    bytes32 public constant POSTMAN_ROLE = keccak256("POSTMAN_ROLE");
    /// @inheritdoc IEntrypoint
    bytes32 public constant REFUNDER_ROLE = keccak256("REFUNDER_ROLE");
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

    /// @dev Where x402 deploys x402BatchSettlement on every chain: a private tab's channel lives there.
    address private constant BATCH_SETTLEMENT = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

    /// @dev abi.encode(RelayData): five static words.
    uint256 private constant RELAY_DATA_LENGTH = 160;
    /// @dev abi.encode(SellerPayment): six static words.
    uint256 private constant SELLER_PAYMENT_LENGTH = 192;
    /// @dev abi.encode(PoolAuthorization): seven static words.
    uint256 private constant POOL_AUTHORIZATION_LENGTH = 224;
    /// @dev keccak256("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)")
    bytes32 private constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH =
        0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267;
    /// @dev abi.encode(AccessFeeData): two static words. Neither kind of data has the other's length, so a proof made
    ///      for one call is refused by the other instead of being read as its kind.
    uint256 private constant ACCESS_FEE_DATA_LENGTH = 64;

    /// @inheritdoc IEntrypoint
    address public accessFeeTreasury;
    mapping(IERC20 asset => AssetConfig) private _assetConfigs;
    mapping(uint256 scope => RelayTarget) private _relayTargets;
    RootHistory.Roots private _aspRoots;
    uint256 private _latestAspRoot;

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
    function depositRefund(
        IERC20 asset,
        uint256 originNullifierHash,
        PaymentRecord calldata payment,
        RefundAuthorization calldata authorization
    ) external onlyRole(REFUNDER_ROLE) nonReentrant returns (uint256 commitment) {
        IPrivacyPool pool = _assetConfigs[asset].pool;
        if (address(pool) == address(0)) revert AssetNotRegistered();
        if (payment.amount == 0) revert ZeroRefund();
        // EIP-3009 takes an authorization while block.timestamp < validBefore: from then on no seller can use it.
        if (block.timestamp < payment.validBefore) revert PaymentNotExpired();
        if (IEIP3009(address(asset)).authorizationState(payment.payer, payment.nonce)) revert PaymentAlreadyUsed();
        return _returnPayout(asset, pool, originNullifierHash, payment, payment.amount, authorization);
    }

    /// @inheritdoc IEntrypoint
    function refundAuthorization(
        IERC20 asset,
        uint256 originNullifierHash,
        AuthorizedTransfer calldata transfer,
        uint256 refundAnchor
    ) external nonReentrant returns (uint256 commitment) {
        IPrivacyPool pool = _assetConfigs[asset].pool;
        if (address(pool) == address(0)) revert AssetNotRegistered();
        if (block.timestamp < transfer.validBefore) revert PaymentNotExpired();
        bytes32 nonce = bytes32(originNullifierHash);
        if (IEIP3009(address(asset)).authorizationState(address(pool), nonce)) revert PaymentAlreadyUsed();
        bytes32 digest = _transferDigest(asset, address(pool), transfer, nonce);
        commitment = pool.depositRefund(originNullifierHash, SpendRecord.authorized(digest, refundAnchor), transfer.value, refundAnchor);
        emit RefundDeposited(address(pool), commitment, originNullifierHash, transfer.value);
    }

    /// @inheritdoc IEntrypoint
    function depositTabRefund(
        IERC20 asset,
        uint256 originNullifierHash,
        PaymentRecord calldata payment,
        bytes32 channelId,
        uint256 depositSalt,
        RefundAuthorization calldata authorization
    ) external onlyRole(REFUNDER_ROLE) nonReentrant returns (uint256 commitment) {
        IPrivacyPool pool = _assetConfigs[asset].pool;
        if (address(pool) == address(0)) revert AssetNotRegistered();
        if (payment.amount == 0) revert ZeroRefund();
        if (keccak256(abi.encode(channelId, depositSalt)) != payment.nonce) revert TabChannelMismatch();
        if (!IEIP3009(address(asset)).authorizationState(payment.payer, payment.nonce)) revert TabNotOpened();
        (, uint128 totalClaimed) = IX402BatchSettlement(BATCH_SETTLEMENT).channels(channelId);
        // Vouchers never exceed the deposit, so the seller claims at most the payout; more would be a stranger's
        // deposit claimed, and then nothing of the payout is left.
        if (totalClaimed >= payment.amount) revert TabFullyClaimed();
        uint256 rest = payment.amount - totalClaimed;
        commitment = pool.depositRefund(originNullifierHash, keccak256(abi.encode(payment)), rest, payment.refundAnchor);
        // The rest is back once the single-use payer holds it (the seller's refund, or the payer side's withdrawal
        // after its delay), whatever the channel holds beyond the claims: a stranger's deposit there is not waited for.
        if (asset.balanceOf(payment.payer) < rest) revert TabRestNotReturned();
        _pullRefund(asset, pool, originNullifierHash, payment.payer, rest, commitment, authorization);
    }

    /// @dev The pool checks `payment` against its record of the relay and inserts the refund note of `value` under
    ///      the proof's refund anchor; the payer's authorization then moves exactly `value` into the pool.
    function _returnPayout(
        IERC20 asset,
        IPrivacyPool pool,
        uint256 originNullifierHash,
        PaymentRecord calldata payment,
        uint256 value,
        RefundAuthorization calldata authorization
    ) private returns (uint256 commitment) {
        commitment = pool.depositRefund(originNullifierHash, keccak256(abi.encode(payment)), value, payment.refundAnchor);
        _pullRefund(asset, pool, originNullifierHash, payment.payer, value, commitment, authorization);
    }

    /// @dev Moves `value` from `payer` into the pool by the payer's ReceiveWithAuthorization of exactly that value, for
    ///      the refund note `commitment` the pool just inserted.
    function _pullRefund(
        IERC20 asset,
        IPrivacyPool pool,
        uint256 originNullifierHash,
        address payer,
        uint256 value,
        uint256 commitment,
        RefundAuthorization calldata authorization
    ) private {
        IEIP3009(address(asset)).receiveWithAuthorization(
            payer,
            address(this),
            value,
            authorization.validAfter,
            authorization.validBefore,
            authorization.nonce,
            authorization.signature
        );
        asset.safeTransfer(address(pool), value);
        emit RefundDeposited(payer, commitment, originNullifierHash, value);
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

    function _relayTarget(uint256 scope) private view returns (RelayTarget memory target) {
        target = _relayTargets[scope];
        if (address(target.pool) == address(0)) revert UnknownScope();
    }

    /// @dev What the entrypoint checks of a relayed withdrawal (its processing, its data's fee against the maximum and
    ///      the proof's, its context) and where its value goes, from its data: RelayData (and, for a single-use
    ///      payer's payment, the record a refund of it must later present), a PoolAuthorization or a SellerPayment.
    function _payout(
        IPrivacyPool.Withdrawal calldata withdrawal,
        ProofLib.WithdrawProof calldata proof,
        uint256 scope,
        RelayTarget memory target
    ) private view returns (IPrivacyPool.Payout memory) {
        _checkProcessing(withdrawal, proof);
        uint256 dataLength = withdrawal.data.length;
        if (dataLength == POOL_AUTHORIZATION_LENGTH) return _authorizationPayout(withdrawal, proof, scope, target);
        if (dataLength != RELAY_DATA_LENGTH) return _sellerPayout(withdrawal, proof, scope);
        RelayData memory relayData = abi.decode(withdrawal.data, (RelayData));
        uint256 feeAmount = _relayFee(relayData.relayFeeBPS, proof, target.maxRelayFeeBPS);
        _checkContext(withdrawal, proof, scope);
        bytes32 spendRecord = relayData.paymentNonce == 0
            ? SpendRecord.PLAIN
            : keccak256(
                abi.encode(
                    PaymentRecord(
                        relayData.recipient,
                        proof.withdrawnValue() - feeAmount,
                        relayData.paymentNonce,
                        relayData.paymentValidBefore,
                        proof.refundAnchor()
                    )
                )
            );
        return IPrivacyPool.Payout(relayData.recipient, relayData.feeRecipient, feeAmount, spendRecord);
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

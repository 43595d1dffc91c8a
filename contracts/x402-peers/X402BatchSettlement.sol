// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {IX402BatchSettlement} from "../interfaces/IX402BatchSettlement.sol";
import {IDepositCollector} from "../interfaces/IDepositCollector.sol";

/// @title X402BatchSettlement
/// @notice Test peer of x402's `x402BatchSettlement`, written to the batch-settlement scheme's published spec and the
///         ABI x402's EVM package (2.27) calls: unidirectional channels funded by a payer, claimed by cumulative
///         vouchers, swept to receivers, refunded to the payer. It lives only at the address that package expects, on a local chain
///         (x402-peers/batch-settlement.ts), so its EIP-712 domain is read from `address(this)` at each call.
contract X402BatchSettlement is IX402BatchSettlement, Multicall, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    /// @param totalClaimed The channel's claimed total after this row (cumulative, not an increment).
    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    struct ChannelState {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct PendingWithdrawal {
        uint128 amount;
        uint40 initiatedAt;
    }

    struct ReceiverState {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    uint40 public constant MIN_WITHDRAW_DELAY = 900;
    uint40 public constant MAX_WITHDRAW_DELAY = 2_592_000;

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 private constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 private constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 private constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 private constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");

    mapping(bytes32 channelId => ChannelState) public channels;
    mapping(bytes32 channelId => PendingWithdrawal) public pendingWithdrawals;
    /// @notice The nonce the next `refundWithSignature` must carry; every refund advances it.
    mapping(bytes32 channelId => uint256) public refundNonce;
    mapping(address receiver => mapping(address token => ReceiverState)) public receivers;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 balance);
    event Claimed(bytes32 indexed channelId, uint128 amount, uint128 totalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 initiatedAt);
    event Withdrawn(bytes32 indexed channelId, uint128 amount);
    event Refunded(bytes32 indexed channelId, uint128 amount, uint256 nonce);

    /// @notice The config's withdraw delay is outside 15 minutes to 30 days: open the channel with one inside.
    error WithdrawDelayOutOfRange();
    /// @notice A deposit or withdrawal of nothing.
    error ZeroAmount();
    /// @notice The collector did not deliver exactly the deposit: use the collector the payer authorized.
    error DepositNotReceived();
    /// @notice The voucher is not signed by the channel's payerAuthorizer (or, when that is zero, its payer).
    error InvalidVoucherSignature(bytes32 channelId);
    /// @notice A claim above the voucher's ceiling: claim at most `maxClaimableAmount`.
    error ClaimExceedsVoucher(bytes32 channelId);
    /// @notice A claim above what the channel holds: claim at most its balance.
    error ClaimExceedsBalance(bytes32 channelId);
    /// @notice Only the channel's receiver or receiverAuthorizer may do this without a signature.
    error NotReceiverSide(bytes32 channelId);
    /// @notice Only the channel's payer or payerAuthorizer may withdraw.
    error NotPayerSide(bytes32 channelId);
    /// @notice A claim batch with no rows.
    error EmptyClaims();
    /// @notice The rows of one signed claim batch name different receiverAuthorizers: sign one batch per authorizer.
    error MixedReceiverAuthorizers();
    /// @notice The claim batch or refund is not signed by the channel's receiverAuthorizer.
    error InvalidAuthorizerSignature();
    /// @notice The refund's nonce is not the channel's `refundNonce`: sign the refund again with the current one.
    error InvalidRefundNonce(uint256 expected);
    /// @notice A withdrawal above the channel's unclaimed balance.
    error WithdrawExceedsUnclaimed(bytes32 channelId);
    /// @notice A timed withdrawal is already pending: finalize it first.
    error WithdrawAlreadyPending(bytes32 channelId);
    /// @notice No timed withdrawal is pending: initiate one first.
    error NoPendingWithdrawal(bytes32 channelId);
    /// @notice The withdraw delay has not passed since the withdrawal was initiated: wait until `readyAt`.
    error WithdrawDelayNotElapsed(uint256 readyAt);

    /// @notice Moves `amount` from the payer into the channel through `collector`, under the payer's authorization.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange();
        }
        if (amount == 0) revert ZeroAmount();
        bytes32 channelId = getChannelId(config);
        IERC20 token = IERC20(config.token);
        uint256 before = token.balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, token, amount, channelId, collectorData);
        if (token.balanceOf(address(this)) - before != amount) revert DepositNotReceived();

        ChannelState storage channel = channels[channelId];
        if (channel.balance == 0) emit ChannelCreated(channelId, config);
        channel.balance += amount;
        emit Deposited(channelId, msg.sender, amount, channel.balance);
    }

    /// @notice Raises each row's channel to its claimed total. Sent by each row's receiver or receiverAuthorizer.
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            ChannelConfig calldata config = voucherClaims[i].voucher.channel;
            if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) {
                revert NotReceiverSide(getChannelId(config));
            }
            _claim(voucherClaims[i]);
        }
    }

    /// @notice `claim` sent by anyone, under the rows' common receiverAuthorizer's `ClaimBatch` signature.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        if (voucherClaims.length == 0) revert EmptyClaims();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        for (uint256 i = 1; i < voucherClaims.length; i++) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) revert MixedReceiverAuthorizers();
        }
        if (!SignatureChecker.isValidSignatureNow(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature)) {
            revert InvalidAuthorizerSignature();
        }
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            _claim(voucherClaims[i]);
        }
    }

    /// @notice Sends `receiver` everything claimed for it in `token` and not yet sent. Anyone may call it.
    function settle(address receiver, address token) external nonReentrant {
        ReceiverState storage state = receivers[receiver][token];
        uint128 amount = state.totalClaimed - state.totalSettled;
        if (amount == 0) return;
        state.totalSettled = state.totalClaimed;
        IERC20(token).safeTransfer(receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    /// @notice Starts the payer's escape hatch: after the withdraw delay, `finalizeWithdraw` returns up to `amount`.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        bytes32 channelId = _onlyPayerSide(config);
        if (amount == 0) revert ZeroAmount();
        ChannelState storage channel = channels[channelId];
        if (amount > channel.balance - channel.totalClaimed) revert WithdrawExceedsUnclaimed(channelId);
        if (pendingWithdrawals[channelId].initiatedAt != 0) revert WithdrawAlreadyPending(channelId);
        pendingWithdrawals[channelId] = PendingWithdrawal(amount, uint40(block.timestamp));
        emit WithdrawInitiated(channelId, amount, uint40(block.timestamp));
    }

    /// @notice Pays the payer the pending withdrawal, capped to what is still unclaimed.
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        bytes32 channelId = _onlyPayerSide(config);
        PendingWithdrawal memory pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt == 0) revert NoPendingWithdrawal(channelId);
        uint256 readyAt = uint256(pending.initiatedAt) + config.withdrawDelay;
        if (block.timestamp < readyAt) revert WithdrawDelayNotElapsed(readyAt);
        delete pendingWithdrawals[channelId];
        ChannelState storage channel = channels[channelId];
        uint128 unclaimed = channel.balance - channel.totalClaimed;
        uint128 amount = pending.amount < unclaimed ? pending.amount : unclaimed;
        channel.balance -= amount;
        if (amount > 0) IERC20(config.token).safeTransfer(config.payer, amount);
        emit Withdrawn(channelId, amount);
        _closeIfDrained(channelId, config);
    }

    /// @notice A cooperative refund of up to `amount` to the payer, sent by the receiver or its authorizer.
    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        bytes32 channelId = getChannelId(config);
        if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) revert NotReceiverSide(channelId);
        _refund(channelId, config, amount);
    }

    /// @notice `refund` sent by anyone, under the receiverAuthorizer's `Refund` signature of the current nonce.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 channelId = getChannelId(config);
        if (nonce != refundNonce[channelId]) revert InvalidRefundNonce(refundNonce[channelId]);
        bytes32 digest = getRefundDigest(channelId, nonce, amount);
        if (!SignatureChecker.isValidSignatureNow(config.receiverAuthorizer, digest, receiverAuthorizerSignature)) {
            revert InvalidAuthorizerSignature();
        }
        _refund(channelId, config, amount);
    }

    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _hashTypedData(
            keccak256(
                abi.encode(
                    CHANNEL_CONFIG_TYPEHASH,
                    config.payer,
                    config.payerAuthorizer,
                    config.receiver,
                    config.receiverAuthorizer,
                    config.token,
                    config.withdrawDelay,
                    config.salt
                )
            )
        );
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _hashTypedData(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _hashTypedData(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH,
                    getChannelId(voucherClaims[i].voucher.channel),
                    voucherClaims[i].voucher.maxClaimableAmount,
                    voucherClaims[i].totalClaimed
                )
            );
        }
        return _hashTypedData(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    /// @dev A row whose total is not above the channel's claimed total changes nothing: vouchers are cumulative, so an
    ///      old or repeated one is superseded, never paid twice.
    function _claim(VoucherClaim calldata row) private {
        ChannelConfig calldata config = row.voucher.channel;
        bytes32 channelId = getChannelId(config);
        _checkVoucher(channelId, config, row.voucher.maxClaimableAmount, row.signature);
        if (row.totalClaimed > row.voucher.maxClaimableAmount) revert ClaimExceedsVoucher(channelId);
        ChannelState storage channel = channels[channelId];
        if (row.totalClaimed > channel.balance) revert ClaimExceedsBalance(channelId);
        if (row.totalClaimed <= channel.totalClaimed) return;
        uint128 amount = row.totalClaimed - channel.totalClaimed;
        channel.totalClaimed = row.totalClaimed;
        receivers[config.receiver][config.token].totalClaimed += amount;
        emit Claimed(channelId, amount, row.totalClaimed);
    }

    /// @dev The nonce advances before the amount is capped: a refund with nothing left to return still spends it.
    function _refund(bytes32 channelId, ChannelConfig calldata config, uint128 amount) private {
        uint256 nonce = refundNonce[channelId]++;
        ChannelState storage channel = channels[channelId];
        uint128 unclaimed = channel.balance - channel.totalClaimed;
        uint128 refunded = amount < unclaimed ? amount : unclaimed;
        if (refunded == 0) return;
        channel.balance -= refunded;
        PendingWithdrawal storage pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt != 0) {
            if (refunded >= pending.amount) delete pendingWithdrawals[channelId];
            else pending.amount -= refunded;
        }
        IERC20(config.token).safeTransfer(config.payer, refunded);
        emit Refunded(channelId, refunded, nonce);
        _closeIfDrained(channelId, config);
    }

    function _checkVoucher(bytes32 channelId, ChannelConfig calldata config, uint128 maxClaimableAmount, bytes calldata signature)
        private
        view
    {
        bytes32 digest = getVoucherDigest(channelId, maxClaimableAmount);
        bool valid;
        if (config.payerAuthorizer != address(0)) {
            (address signer, ECDSA.RecoverError error,) = ECDSA.tryRecover(digest, signature);
            valid = error == ECDSA.RecoverError.NoError && signer == config.payerAuthorizer;
        } else {
            valid = SignatureChecker.isValidSignatureNow(config.payer, digest, signature);
        }
        if (!valid) revert InvalidVoucherSignature(channelId);
    }

    function _onlyPayerSide(ChannelConfig calldata config) private view returns (bytes32 channelId) {
        channelId = getChannelId(config);
        bool payerSide =
            msg.sender == config.payer || (config.payerAuthorizer != address(0) && msg.sender == config.payerAuthorizer);
        if (!payerSide) revert NotPayerSide(channelId);
    }

    function _closeIfDrained(bytes32 channelId, ChannelConfig calldata config) private {
        ChannelState storage channel = channels[channelId];
        if (channel.balance == 0 && channel.totalClaimed == 0) emit ChannelClosed(channelId, config);
    }

    function _hashTypedData(bytes32 structHash) private view returns (bytes32) {
        bytes32 domainSeparator = keccak256(
            abi.encode(
                DOMAIN_TYPEHASH, keccak256("x402 Batch Settlement"), keccak256("1"), block.chainid, address(this)
            )
        );
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator, structHash));
    }
}

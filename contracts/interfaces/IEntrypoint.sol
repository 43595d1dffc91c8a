// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ProofLib} from "../lib/ProofLib.sol";
import {IDepositCollector} from "./IDepositCollector.sol";
import {IPrivacyPool} from "./IPrivacyPool.sol";
import {IX402BatchSettlement} from "./IX402BatchSettlement.sol";

/// @title IEntrypoint
/// @notice The single entry to the privacy pools: a registry of one pool per asset, deposits, relayed withdrawals
///         that pay a recipient and a relay fee (or have the pool pay an x402 seller itself, or open a private tab),
///         the history of ASP roots with its revocations, the return of what such payments left unused as the agent's
///         refund note (by calls anyone may make: no role moves or returns an agent's money), and access-fee payments
///         bound to a note.
/// @dev Revocation: the ASP root history has epochs. `revokeAndUpdateRoot` closes the current epoch, so every
///      ASP root published before it is refused by `relay` from that transaction on (for every caller, with or
///      without our relayer), except the roots the postman names as kept: those whose trees hold no label that
///      left the set. A root published with `updateRoot` revokes nothing and leaves the earlier roots accepted.
///      As IDepositCollector it delivers a private tab's deposit to x402BatchSettlement, only within that tab's relay.
interface IEntrypoint is IDepositCollector {
    /*//////////////////////////////////////////////////////////////
                                STRUCTS
    //////////////////////////////////////////////////////////////*/

    /// @notice How a relayed withdrawal is paid out; abi-encoded into IPrivacyPool.Withdrawal.data (96 bytes), so the
    ///         proof's context binds every field.
    /// @param recipient Receives the withdrawn value minus the fee.
    /// @param feeRecipient Receives withdrawnValue * relayFeeBPS / BPS_DENOMINATOR.
    /// @param relayFeeBPS The relay fee in basis points, at most the pool's maxRelayFeeBPS; the proof's relayFeeBPS.
    struct RelayData {
        address recipient;
        address feeRecipient;
        uint256 relayFeeBPS;
    }

    /// @notice A seller's x402 price paid straight from the pool by the relay of the agent's proof, with no payer
    ///         between them; abi-encoded into IPrivacyPool.Withdrawal.data (192 bytes, where a RelayData takes
    ///         96), so the proof's context binds every field, and the relay answers only these terms, once.
    /// @param payTo The seller, which receives exactly `amount`.
    /// @param amount The seller's price in atomic units.
    /// @param feeRecipient Whoever the seller's facilitator names to be paid for relaying; accrues `fee` in the pool.
    /// @param fee What relaying is paid, in atomic units: the withdrawn value is exactly amount + fee.
    /// @param requestReference The seller's reference of the request being paid (its 402 gave it).
    /// @param validBefore The relay is refused from this time on (block.timestamp >= validBefore): a payload the
    ///        seller never settled stops binding the note.
    struct SellerPayment {
        address payTo;
        uint256 amount;
        address feeRecipient;
        uint256 fee;
        bytes32 requestReference;
        uint256 validBefore;
    }

    /// @notice An x402 `exact` seller paid by the pool itself: the relay spends the note and the pool authorizes exactly
    ///         one EIP-3009 TransferWithAuthorization from the pool to `payTo`, which the seller's own facilitator
    ///         executes through the pool's ERC-1271 isValidSignature (PrivacyPool). abi-encoded into
    ///         IPrivacyPool.Withdrawal.data (224 bytes, where a RelayData takes 96 and a SellerPayment 192), so the
    ///         proof's context binds every field. Unused by `validBefore`, it comes back as the agent's refund note
    ///         through refundAuthorization, which anyone may call.
    /// @param payTo The seller, the authorization's `to`.
    /// @param value The authorization's value: the withdrawn value less the relay fee, exactly.
    /// @param validAfter The authorization is valid after this time.
    /// @param validBefore The authorization is valid before this time; the relay is refused from then on.
    /// @param nonce The authorization's nonce: the spent note's nullifier hash, which the pool spends once, so no two of
    ///        the pool's authorizations share a nonce and none can be used up by another.
    /// @param feeRecipient Receives withdrawnValue * relayFeeBPS / BPS_DENOMINATOR.
    /// @param relayFeeBPS The relay fee in basis points, at most the pool's maxRelayFeeBPS; the proof's relayFeeBPS.
    struct PoolAuthorization {
        address payTo;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
        address feeRecipient;
        uint256 relayFeeBPS;
    }

    /// @notice The transfer a PoolAuthorization authorized, as a refund of it names it: the nonce is the origin's
    ///         nullifier hash.
    /// @param payTo The authorization's `to`.
    /// @param value Its value.
    /// @param validAfter Its validAfter.
    /// @param validBefore Its validBefore.
    struct AuthorizedTransfer {
        address payTo;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
    }

    /// @notice A private tab opened by the pool: the relay spends the note and deposits exactly its value less the fee
    ///         into the x402 batch-settlement channel `channel`, in the same transaction; abi-encoded into
    ///         IPrivacyPool.Withdrawal.data (320 bytes, no other kind's length), so the proof's context binds every field.
    ///         The channel's payer is the tab's own TabPayer (tabPayerOf the note's nullifier hash), so whatever the
    ///         channel gives back reaches no one but that payer, and leaves it only into the pool as the agent's refund
    ///         note (returnTab). Vouchers are signed by `channel.payerAuthorizer`, the agent's tab key.
    /// @param channel The channel: payer tabPayerOf(nullifierHash), token the pool's asset, withdrawDelay at most
    ///        MAX_TAB_WITHDRAW_DELAY.
    /// @param reclaimableAfter From this time on anyone may start and finish the channel's withdrawal (withdrawTab):
    ///        the tab's lifetime, which the agent chose and its proof binds.
    /// @param feeRecipient Receives withdrawnValue * relayFeeBPS / BPS_DENOMINATOR.
    /// @param relayFeeBPS The relay fee in basis points, at most the pool's maxRelayFeeBPS; the proof's relayFeeBPS.
    struct TabOpening {
        IX402BatchSettlement.ChannelConfig channel;
        uint256 reclaimableAfter;
        address feeRecipient;
        uint256 relayFeeBPS;
    }

    /// @notice What the relay of a TabOpening deposited, as the pool records it (hashed) in the spent nullifier hash's
    ///         slot: the only tab withdrawTab may take back and returnTab may refund for that note.
    /// @param channel The channel, as the TabOpening named it.
    /// @param deposit What the relay deposited: the withdrawn value less the relay fee.
    /// @param reclaimableAfter The TabOpening's reclaimableAfter.
    /// @param refundAnchor The proof's refundAnchor: what the refund note is made from.
    struct TabRecord {
        IX402BatchSettlement.ChannelConfig channel;
        uint256 deposit;
        uint256 reclaimableAfter;
        uint256 refundAnchor;
    }

    /// @notice What an access fee paid by a withdrawal proof pays and for which note (relayAccessFee); abi-encoded into
    ///         IPrivacyPool.Withdrawal.data (64 bytes, where a RelayData takes 96), so the proof's context binds both.
    /// @param treasury The access-fee treasury, which receives the whole withdrawn value; must be accessFeeTreasury.
    /// @param nullifierHash The nullifier hash of the note the fee authorizes (typically the spend's own change note).
    struct AccessFeeData {
        address treasury;
        uint256 nullifierHash;
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
    /// @param depth The depth of that tree; a proof against the root must declare it.
    /// @param cid Where the tree's contents are published (an IPFS CID or a URL).
    /// @param timestamp The block timestamp of the update.
    /// @param revoking Whether the update revoked the earlier roots (all but those in AspRootsRevoked's keptRoots).
    event RootUpdated(uint256 root, uint256 depth, string cid, uint256 timestamp, bool revoking);

    /// @notice The postman revoked every earlier ASP root but `keptRoots`; emitted just before the revoking
    ///         RootUpdated.
    /// @param keptRoots The earlier roots that stay accepted (their trees hold no label that left the set).
    event AspRootsRevoked(uint256[] keptRoots);

    /// @notice A tab's rest or an unused pool authorization came back into the pool as a refund note.
    /// @param payer The payer the amount came from: the pool itself for a pool authorization (nothing moved), the
    ///        tab's TabPayer for a tab.
    /// @param commitment The refund note's commitment, Poseidon(value, refundAnchor) (the origin's label; the pool's
    ///        LeafInserted has its index).
    /// @param originNullifierHash The nullifier hash of the note whose relay made the payment.
    /// @param value The refunded amount: the authorization's value, or the tab's deposit less what its seller claimed.
    event RefundDeposited(address indexed payer, uint256 commitment, uint256 originNullifierHash, uint256 value);

    /// @notice An access fee was paid for the note with `nullifierHash`.
    /// @param payer The account the fee was pulled from (payAccessFee), or the pool whose note paid it (relayAccessFee).
    /// @param nullifierHash The nullifier hash of the note the fee authorizes; only this note.
    /// @param asset The asset paid.
    /// @param amount The amount paid to the treasury.
    /// @param treasury The treasury that received it.
    event AccessFeePaid(
        address indexed payer,
        uint256 indexed nullifierHash,
        IERC20 asset,
        uint256 amount,
        address treasury
    );

    /// @notice The admin set the treasury that access fees are paid to.
    /// @param treasury The new treasury.
    event AccessFeeTreasuryUpdated(address treasury);

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

    /// @notice The proof's context does not match the withdrawal and the pool's scope.
    error ContextMismatch();

    /// @notice The proof's ASP root was never published, or is older than the last ROOT_HISTORY_SIZE roots and
    ///         than ROOT_MIN_LIFETIME_BLOCKS blocks.
    error UnknownAspRoot();

    /// @notice The proof's ASP root was revoked by a later revoking root: prove again against the latest root.
    error AspRootRevoked();

    /// @notice The proof's declared ASP tree depth is not the depth published with its ASP root.
    error AspTreeDepthMismatch();

    /// @notice The ASP tree depth to publish is above MAX_TREE_DEPTH.
    error AspTreeDepthAboveMaximum();

    /// @notice A root named as kept by a revocation is not an accepted ASP root.
    /// @param root The root.
    error KeptRootNotAccepted(uint256 root);

    /// @notice The payment's authorization is still valid (block.timestamp < validBefore): the seller may still use it.
    error PaymentNotExpired();

    /// @notice The pool's authorization was used: the seller was paid, nothing is refunded.
    error PaymentAlreadyUsed();

    /// @notice The rest of the tab (its payout less the seller's claims) is not back at its payer yet: the seller's
    ///         refund or the payer side's withdrawal after its delay brings it back. What the channel holds beyond that
    ///         (a stranger's deposit) is not waited for.
    error TabRestNotReturned();

    /// @notice The tab's seller claimed the whole payout: nothing came back to return.
    error TabFullyClaimed();

    /// @notice A TabOpening's channel payer is not tabPayerOf(the proof's nullifier hash): the channel would give back
    ///         to someone else.
    error TabPayerMismatch();

    /// @notice A TabOpening's channel token is not the pool's asset.
    error TabTokenMismatch();

    /// @notice A TabOpening's channel withdrawDelay is above MAX_TAB_WITHDRAW_DELAY: an abandoned tab would stay locked
    ///         longer than that after its lifetime.
    error TabWithdrawDelayAboveMaximum();

    /// @notice relayBatch got a TabOpening: a tab's deposit follows its spend in the same call, so open each tab with
    ///         relay.
    error TabOpeningNotBatched();

    /// @notice Only x402BatchSettlement, while a tab's relay deposits into its channel, may collect from the entrypoint.
    error NotDepositing();

    /// @notice The tab's lifetime has not passed: until reclaimableAfter only its seller's refund or the agent's tab
    ///         key brings its rest back.
    error TabStillOpen();

    /// @notice The TabRecord is not the one the pool recorded for the note's relay (or that tab was refunded already).
    error TabNotRecorded();

    /// @notice The relay data's relayFeeBPS is not the proof's: the fee would not be the one the note's owner agreed to. For
    ///         relayAccessFee and seller payments, whose fee is no rate, the proof's relayFeeBPS is not 0.
    error RelayFeeMismatch();

    /// @notice The withdrawal's data is not the length of its call's kind: abi.encode(RelayData), 96 bytes,
    ///         abi.encode(SellerPayment), 192 bytes, abi.encode(PoolAuthorization), 224 bytes, or (relay only)
    ///         abi.encode(TabOpening), 320 bytes, for relay and relayBatch; abi.encode(AccessFeeData), 64 bytes, for
    ///         relayAccessFee.
    error InvalidWithdrawalData();

    /// @notice A seller payment's withdrawn value is not its amount plus its fee.
    error SellerPaymentValueMismatch();

    /// @notice A seller payment's validBefore has passed: the payload no longer binds the note.
    error SellerPaymentExpired();

    /// @notice A PoolAuthorization's nonce is not the spent note's nullifier hash.
    error AuthorizationNonceMismatch();

    /// @notice A PoolAuthorization's value is not the withdrawn value less the relay fee.
    error AuthorizationValueMismatch();

    /// @notice A PoolAuthorization relayed at or after its validBefore: no seller could use it any more.
    error AuthorizationExpired();

    /// @notice The access fee's AccessFeeData.treasury is not the entrypoint's accessFeeTreasury.
    error AccessFeeTreasuryMismatch();

    /// @notice The access fee to pay is zero.
    error ZeroAccessFee();

    /// @notice No access-fee treasury is set.
    error AccessFeeTreasuryNotSet();

    /// @notice The withdrawal's relay fee is above the pool's maxRelayFeeBPS.
    error RelayFeeAboveMaximum();

    /// @notice The ASP root to publish is zero.
    error ZeroAspRoot();

    /// @notice A batch relay holds no withdrawal, more than MAX_BATCH_SIZE, or lists of different lengths.
    error BatchSizeOutOfRange();

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

    /// @notice Relays a withdrawal: the pool pays the recipient and the relay fee directly.
    /// @dev Open to anyone: the proof's context binds recipient, fee recipient and fee, so a relayer cannot
    ///      redirect the funds. With RelayData, pays fee = withdrawnValue * relayFeeBPS / BPS_DENOMINATOR to the fee
    ///      recipient and the rest to the recipient. With a SellerPayment, pays exactly `amount` to `payTo` and `fee`
    ///      to the fee recipient, before `validBefore`, with the proof's relayFeeBPS 0; the spend records the proof's
    ///      context, by which anyone recognizes that these terms were paid, whoever sent the transaction. With a
    ///      PoolAuthorization, the payout stays in the pool, which authorizes the one transfer it names. With a
    ///      TabOpening, the payout goes into the tab's batch-settlement channel in the same call, the entrypoint its
    ///      deposit collector, and the spend records the TabRecord.
    /// @param withdrawal The withdrawal; processooor must be this contract, data abi.encode(RelayData),
    ///      abi.encode(SellerPayment), abi.encode(PoolAuthorization) or abi.encode(TabOpening) (else InvalidWithdrawalData). Reverts with AspRootRevoked when the proof's ASP
    ///      root was revoked, and AspTreeDepthMismatch when its declared ASP tree depth is not the one published with
    ///      the root.
    /// @param proof The Groth16 proof; its ASP root must be accepted (isKnownAspRoot).
    /// @param scope The scope of the pool to withdraw from.
    /// @param stateTreeSize The number of leaves of the state tree whose root the proof uses (the pool's
    ///        stateTreeSizeAt).
    function relay(
        IPrivacyPool.Withdrawal calldata withdrawal,
        ProofLib.WithdrawProof calldata proof,
        uint256 scope,
        uint256 stateTreeSize
    ) external;

    /// @notice Relays several withdrawals from one pool at once: one batch verification of all their proofs (k + 3
    ///         pairings instead of 4k), one insert of all their change notes, one transfer per run of equal fee
    ///         recipients. Each withdrawal is checked as `relay` checks it.
    /// @dev A withdrawal whose note was spent before the batch was mined is skipped (the pool's WithdrawalSkipped)
    ///      and the others are paid. Any other check that `relay` would fail (a bad proof, a stale root, a fee
    ///      above the maximum) reverts the whole batch with that withdrawal's error: the proofs cannot be told
    ///      apart once combined. A relayer that gets a revert relays the withdrawals one by one instead.
    /// @param withdrawals The withdrawals, as for `relay`.
    /// @param proofs Their proofs, in the same order.
    /// @param scope The scope of the pool they all withdraw from.
    /// @param stateTreeSizes The size of each proof's state tree, in the same order.
    function relayBatch(
        IPrivacyPool.Withdrawal[] calldata withdrawals,
        ProofLib.WithdrawProof[] calldata proofs,
        uint256 scope,
        uint256[] calldata stateTreeSizes
    ) external;

    /// @notice Pays an access fee out of a note by a withdrawal proof: the pool pays the whole withdrawn value to the
    ///         access-fee treasury, and AccessFeePaid names the pool as payer and the nullifier hash the withdrawal's
    ///         AccessFeeData names, so no account of the note's owner appears with it.
    /// @dev Open to anyone, as relay, and checked as relay is (processooor, ASP root and its depth, context), but its
    ///      data is abi.encode(AccessFeeData) (exactly 64 bytes), the proof's relayFeeBPS must be 0, the data's
    ///      treasury the accessFeeTreasury (set), and the withdrawn value not zero. The spend records PLAIN: nothing of it
    ///      is refundable. The note spent needs no authorization of its own; the one named is typically its change note.
    /// @param withdrawal The withdrawal; processooor must be this contract, data abi.encode(AccessFeeData).
    /// @param proof The Groth16 proof; its ASP root must be accepted (isKnownAspRoot), its relayFeeBPS 0.
    /// @param scope The scope of the pool to withdraw from.
    /// @param stateTreeSize The number of leaves of the state tree whose root the proof uses.
    function relayAccessFee(
        IPrivacyPool.Withdrawal calldata withdrawal,
        ProofLib.WithdrawProof calldata proof,
        uint256 scope,
        uint256 stateTreeSize
    ) external;

    /// @notice Publishes a new ASP root that revokes nothing: the tree only gained labels.
    /// @dev Only POSTMAN_ROLE. Earlier roots stay accepted while they are among the last ROOT_HISTORY_SIZE or
    ///      younger than ROOT_MIN_LIFETIME_BLOCKS blocks.
    /// @param root The root of the tree of approved labels; not zero.
    /// @param depth The depth of that tree, at most MAX_TREE_DEPTH.
    /// @param cid Where the tree's contents are published.
    function updateRoot(uint256 root, uint256 depth, string calldata cid) external;

    /// @notice Publishes a new ASP root after a label left the set: every earlier root is refused from this
    ///         transaction on, except `keptRoots`.
    /// @dev Only POSTMAN_ROLE. The postman keeps only roots whose trees hold no label that has left the set (for
    ///      instance those published before the excluded label was first approved); each must be accepted now.
    ///      A zero root publishes the empty set: no new root is accepted and latestRoot becomes 0.
    /// @param root The root of the tree of approved labels, or 0 when no label is approved.
    /// @param depth The depth of that tree, at most MAX_TREE_DEPTH.
    /// @param cid Where the tree's contents are published.
    /// @param keptRoots Earlier roots that stay accepted.
    function revokeAndUpdateRoot(uint256 root, uint256 depth, string calldata cid, uint256[] calldata keptRoots)
        external;

    /// @notice Turns a pool authorization nobody used back into the agent's refund note: anyone may call it, and no one
    ///         is paid but the note's owner, in the pool.
    /// @dev Once validBefore has passed (the token takes an authorization only before it) and the token's
    ///      authorizationState says the pool's nonce is unused, the pool checks `authorization` and `refundAnchor`
    ///      against what it recorded at the relay of `originNullifierHash` and inserts Poseidon(value, refundAnchor)
    ///      once. The value never left the pool, so nothing moves.
    /// @param asset The asset, whose token implements EIP-3009 (USDC).
    /// @param originNullifierHash The nullifier hash of the note whose relay made the authorization (its nonce).
    /// @param transfer The transfer it authorized, as the relay's PoolAuthorization named it.
    /// @param refundAnchor The relay's proof's refundAnchor (a public signal).
    /// @return commitment The refund note's commitment, Poseidon(transfer.value, refundAnchor).
    function refundAuthorization(
        IERC20 asset,
        uint256 originNullifierHash,
        AuthorizedTransfer calldata transfer,
        uint256 refundAnchor
    ) external returns (uint256 commitment);

    /// @notice Takes back a private tab nobody drained, after its lifetime: starts the channel's timed withdrawal of
    ///         everything unclaimed to the tab's payer or, once one is pending, finishes it after the channel's
    ///         withdrawDelay. Anyone may call it; the money goes to the tab's payer only (then returnTab).
    /// @dev Reverts TabStillOpen before tab.reclaimableAfter, TabNotRecorded when the pool's record of the origin is
    ///      not `tab`, and with the channel's own error otherwise (nothing unclaimed, the delay not elapsed). A stranger's
    ///      deposit into the channel during the delay is left there; what was pending comes back all the same, so the
    ///      agent's rest is back at the payer one withdrawDelay after the first call.
    /// @param asset The pool's asset.
    /// @param originNullifierHash The nullifier hash of the note whose relay opened the tab.
    /// @param tab The tab as the relay recorded it.
    function withdrawTab(IERC20 asset, uint256 originNullifierHash, TabRecord calldata tab) external;

    /// @notice Returns a private tab's rest, its deposit less what its seller claimed, into the pool as the agent's
    ///         refund note Poseidon(rest, tab.refundAnchor), once the tab's payer holds it. Anyone may call it.
    /// @dev The payer's money comes from the channel (the seller's refund, a withdrawal by the tab key or withdrawTab):
    ///      holding the rest means the channel gave back all of the deposit the seller did not claim, and the seller
    ///      can claim at most what the channel holds beyond that, which is a stranger's. Only the rest moves; what a
    ///      stranger gave the payer stays there, nobody's. Reverts TabFullyClaimed when nothing is left to return,
    ///      TabRestNotReturned while the payer holds less than the rest, and the pool's RefundNotRecorded or
    ///      OriginAlreadyRefunded when `tab` is not its record of the origin.
    /// @param asset The pool's asset.
    /// @param originNullifierHash The nullifier hash of the note whose relay opened the tab.
    /// @param tab The tab as the relay recorded it.
    /// @return commitment The refund note's commitment.
    function returnTab(IERC20 asset, uint256 originNullifierHash, TabRecord calldata tab)
        external
        returns (uint256 commitment);

    /// @notice Pays the access fee of the note with `nullifierHash`: pulls `amount` of `asset` from the caller,
    ///         who must have approved this contract, to the access-fee treasury, and emits AccessFeePaid, the only
    ///         proof of payment a relayer accepts for that note.
    /// @dev The event is public: paying from the address that deposited the note links it to the note's spends.
    ///      relayAccessFee pays out of a note instead, with the pool as payer.
    /// @param asset A registered asset.
    /// @param nullifierHash The nullifier hash of the note to authorize.
    /// @param amount The fee, not zero.
    function payAccessFee(IERC20 asset, uint256 nullifierHash, uint256 amount) external;

    /// @notice Sets the treasury that access fees are paid to.
    /// @dev Only DEFAULT_ADMIN_ROLE.
    /// @param treasury The treasury; not the zero address.
    function setAccessFeeTreasury(address treasury) external;

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice The role allowed to publish ASP roots.
    function POSTMAN_ROLE() external view returns (bytes32);

    /// @notice The deepest ASP tree a root may be published with (the circuit's maxTreeDepth).
    function MAX_TREE_DEPTH() external view returns (uint256);

    /// @notice The most withdrawals one relayBatch takes.
    function MAX_BATCH_SIZE() external view returns (uint256);

    /// @notice Basis points in 100%.
    function BPS_DENOMINATOR() external view returns (uint256);

    /// @notice An unrevoked ASP root stays accepted while it is one of the last ROOT_HISTORY_SIZE published...
    function ROOT_HISTORY_SIZE() external view returns (uint256);

    /// @notice ...or was published less than ROOT_MIN_LIFETIME_BLOCKS blocks ago.
    function ROOT_MIN_LIFETIME_BLOCKS() external view returns (uint256);

    /// @notice The treasury access fees are paid to (the zero address until the admin sets one).
    function accessFeeTreasury() external view returns (address);

    /// @notice The longest withdrawDelay a private tab's channel may have: 7 days.
    function MAX_TAB_WITHDRAW_DELAY() external view returns (uint256);

    /// @notice The TabPayer of the tab a note's relay opens: the entrypoint's CREATE2 address salted by the note's
    ///         nullifier hash, whether or not it is deployed yet.
    function tabPayerOf(uint256 originNullifierHash) external view returns (address);

    /// @notice The registered pool of `asset` and its limits (all zero when it has none).
    function assetConfig(IERC20 asset) external view returns (AssetConfig memory);

    /// @notice The registered pool with this scope, or the zero address.
    function poolByScope(uint256 scope) external view returns (IPrivacyPool);

    /// @notice The newest ASP root, or 0 before the first update and after a revocation to the empty set.
    function latestRoot() external view returns (uint256);

    /// @notice Whether a withdrawal proof may use `root`: published, not revoked, and recent by count or by block.
    function isKnownAspRoot(uint256 root) external view returns (bool);

    /// @notice Whether `root` was published and later revoked (and not kept).
    function isRevokedAspRoot(uint256 root) external view returns (bool);

    /// @notice The ASP tree depth published with `root` (0 for a root never published).
    function aspTreeDepthAt(uint256 root) external view returns (uint256);
}

// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ProofLib} from "../lib/ProofLib.sol";
import {IWithdrawalBatchVerifier} from "./IWithdrawalBatchVerifier.sol";

/// @title IPrivacyPool
/// @notice A pool of notes of one ERC20 asset (docs/design.md sections 2 and 4). Deposits and withdrawals go through
///         the entrypoint; the original depositor of a label may ragequit directly.
interface IPrivacyPool {
    /*//////////////////////////////////////////////////////////////
                                STRUCTS
    //////////////////////////////////////////////////////////////*/

    /// @notice What a withdrawal proof is bound to, through its context signal.
    /// @param processooor The address the pool pays the withdrawn value to (the entrypoint when relayed).
    /// @param data Processing data; for a relay, abi.encode(IEntrypoint.RelayData).
    struct Withdrawal {
        address processooor;
        bytes data;
    }

    /// @notice Where a relayed withdrawal's value goes, as the entrypoint read it from the withdrawal's relay data.
    /// @param recipient Receives the withdrawn value less `feeAmount`; the pool itself keeps it for the transfer a
    ///        pool authorization's spend record authorizes (isValidSignature).
    /// @param feeRecipient Accrues `feeAmount` in the pool, for claimFees (nothing when it is zero).
    /// @param feeAmount At most the withdrawn value.
    /// @param spendRecord What the nullifier hash's slot keeps once spent (SpendRecord): PLAIN, the hash of the
    ///        payment a refund may later return, a seller payment's context, or a pool authorization.
    struct Payout {
        address recipient;
        address feeRecipient;
        uint256 feeAmount;
        bytes32 spendRecord;
    }

    /// @notice The path of a leaf of the state tree, in the circuit's form.
    /// @param stateTreeSize The number of leaves of the tree whose root the path leads to; its root must be accepted
    ///        (isKnownStateRoot) and its depth, the least d with 2^d >= stateTreeSize, is the path's length.
    /// @param leafIndex The leaf's position.
    /// @param siblings The sibling at each level, 0 where the node has none and is promoted.
    struct StatePath {
        uint256 stateTreeSize;
        uint256 leafIndex;
        uint256[] siblings;
    }

    /*//////////////////////////////////////////////////////////////
                                 EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice A note was deposited.
    /// @param depositor The account whose tokens were deposited; the only one that may ragequit `label`.
    /// @param commitment Poseidon(value, label, precommitment), inserted into the state tree.
    /// @param label The label the pool assigned to the deposit.
    /// @param value The deposited amount in the asset's atomic units.
    /// @param precommitment Poseidon(nullifier, secret), chosen by the depositor.
    event Deposited(
        address indexed depositor,
        uint256 commitment,
        uint256 label,
        uint256 value,
        uint256 precommitment
    );

    /// @notice A leaf was appended to the state tree (a deposit or a change note).
    /// @param leafIndex The position of the leaf, counting from 0.
    /// @param leaf The inserted commitment.
    /// @param root The state root after the insertion.
    event LeafInserted(uint256 leafIndex, uint256 leaf, uint256 root);

    /// @notice A note was spent by a withdrawal proof (relayed by the entrypoint, which had the value paid out directly).
    /// @param withdrawnValue The amount that left the pool.
    /// @param spentNullifierHash The nullifier hash of the spent note.
    /// @param newCommitment The change note's commitment (a zero-value note when the whole note was withdrawn).
    event Withdrawn(
        uint256 withdrawnValue,
        uint256 spentNullifierHash,
        uint256 newCommitment
    );

    /// @notice The fees accrued to a fee recipient left the pool for it (claimFees).
    /// @param feeRecipient The fee recipient, which received `amount`.
    /// @param amount What was paid: everything accrued but the one atomic unit the pool keeps.
    event FeesClaimed(address indexed feeRecipient, uint256 amount);

    /// @notice A batch left out a withdrawal whose note was spent before the batch was mined; it paid the others.
    /// @param spentNullifierHash The nullifier hash of the note, spent by someone else (or earlier in the batch).
    event WithdrawalSkipped(uint256 spentNullifierHash);

    /// @notice The original depositor of a label took a note back without a withdrawal proof.
    /// @param depositor The original depositor, who received `value`.
    /// @param commitment The commitment of the note taken back.
    /// @param label The note's label.
    /// @param value The amount returned.
    /// @param spentNullifierHash The nullifier hash of the note, now spent.
    event Ragequit(
        address indexed depositor,
        uint256 commitment,
        uint256 label,
        uint256 value,
        uint256 spentNullifierHash
    );

    /*//////////////////////////////////////////////////////////////
                                 ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice A constructor argument is the zero address.
    error ZeroAddress();

    /// @notice The caller is not the entrypoint.
    error OnlyEntrypoint();

    /// @notice The caller is not the original depositor of the label.
    error OnlyOriginalDepositor();

    /// @notice A note value is not below 2^128.
    error ValueAboveNoteLimit();

    /// @notice The proof's state root is not the accepted root of a state tree of the given size: never its root,
    ///         or older than the last ROOT_HISTORY_SIZE roots and than ROOT_MIN_LIFETIME_BLOCKS blocks.
    error UnknownStateRoot();

    /// @notice The declared state tree depth (a proof's, or a path's length) is not the depth of a tree of the given
    ///         size.
    error StateTreeDepthMismatch();

    /// @notice The note's nullifier hash has already been spent.
    error NullifierAlreadySpent();

    /// @notice The verifier rejected the proof.
    error InvalidProof();

    /// @notice The path of the note being taken back does not lead to an accepted state root.
    error CommitmentNotInStateTree();

    /// @notice The origin of a refund records no such payment: its note is unspent, its spend made no refundable
    ///         payment, or it made another one (another transfer, tab or refund anchor).
    error RefundNotRecorded();

    /// @notice The payment of this origin was refunded already.
    error OriginAlreadyRefunded();

    /// @notice claimFees found nothing to pay: the recipient has accrued at most the unit the pool keeps.
    error NoFeesToClaim();

    /*//////////////////////////////////////////////////////////////
                                 LOGIC
    //////////////////////////////////////////////////////////////*/

    /// @notice Records a deposit whose tokens the entrypoint has already moved into the pool.
    /// @dev Only the entrypoint. Assigns label = keccak256(abi.encodePacked(SCOPE, ++nonce)) % SNARK_SCALAR_FIELD.
    /// @param depositor The account the tokens came from.
    /// @param value The deposited amount, below 2^128.
    /// @param precommitment Poseidon(nullifier, secret) of the new note.
    /// @return commitment The note's commitment, now a leaf of the state tree.
    function deposit(address depositor, uint256 value, uint256 precommitment) external returns (uint256 commitment);

    /// @notice Spends a note by a withdrawal proof, inserts its change note and pays the withdrawn value out: the
    ///         rest after the fee to the recipient, directly (not through the processooor, which would pass it on);
    ///         the fee accrues to the fee recipient in the pool (claimFees), one storage write instead of a transfer.
    /// @dev Only the entrypoint, which checks the ASP root and its depth before calling and takes the payout from
    ///      the withdrawal's relay data, which the proof's context binds. The state root must be the accepted root
    ///      of the tree with `stateTreeSize` leaves, and the proof's stateTreeDepth the depth of that tree.
    /// @param proof The Groth16 proof and its public signals; the entrypoint checked its context.
    /// @param stateTreeSize The number of leaves of the tree whose root the proof uses (stateTreeSizeAt): it names
    ///        the one slot of the root history to read.
    /// @param payout Who receives the withdrawn value and the fee.
    function withdraw(ProofLib.WithdrawProof calldata proof, uint256 stateTreeSize, Payout calldata payout) external;

    /// @notice Spends several notes at once, each as `withdraw` does, with one batch verification of their proofs
    ///         (WITHDRAWAL_BATCH_VERIFIER) and one insert of their change notes, whose LeafInserted events all carry
    ///         the root after the last. Fees to the same recipient in a row accrue in one write.
    /// @dev Only the entrypoint. A withdrawal whose note is already spent (by another transaction mined first, or
    ///      earlier in the batch) is skipped, not paid, and named by WithdrawalSkipped; its proof is not verified.
    ///      Any other failing check (context, state root or depth, a proof the batch verifier rejects) reverts the
    ///      whole batch.
    /// @param proofs The proofs, one per withdrawal.
    /// @param stateTreeSizes The size of each proof's state tree.
    /// @param payouts Who receives each withdrawal's value and fee.
    function withdrawBatch(
        ProofLib.WithdrawProof[] calldata proofs,
        uint256[] calldata stateTreeSizes,
        Payout[] calldata payouts
    ) external;

    /// @notice Inserts the refund note of an unused payment once its tokens are the pool's.
    /// @dev Only the entrypoint, which has checked the payment unused (a pool authorization expired and not used, a
    ///      tab's rest back at its payer) and moves exactly its amount, if any. The origin's slot must hold that
    ///      payment's record (`paymentRecord`); it then holds REFUNDED, so a payment is refunded once.
    /// @param originNullifierHash The nullifier hash of the note whose relay made the payment.
    /// @param paymentRecord The payment's SpendRecord: SpendRecord.authorized of the authorization, or the hash of
    ///        the tab's IEntrypoint.TabRecord.
    /// @param value What came back: the authorization's value, or a tab's rest.
    /// @param refundAnchor The relay's proof's refundAnchor (the origin's label, hidden by its owner's precommitment).
    /// @return commitment The refund note inserted, Poseidon(value, refundAnchor).
    function depositRefund(uint256 originNullifierHash, bytes32 paymentRecord, uint256 value, uint256 refundAnchor)
        external
        returns (uint256 commitment);

    /// @notice Pays a fee recipient the fees its withdrawals accrued, all but one atomic unit, which stays so that
    ///         the next fee rewrites a slot instead of creating one (about 17k gas less for that withdrawal).
    ///         Anyone may call it: the fees only ever go to their recipient.
    /// @param feeRecipient The fee recipient to pay.
    /// @return claimed What was paid.
    function claimFees(address feeRecipient) external returns (uint256 claimed);

    /// @notice Returns a note to the original depositor of its label without a withdrawal proof.
    /// @dev Reveals the note's nullifier and secret on chain. It is the exit for a deposit the ASP never approved:
    ///      while the label is in an ASP root inside the entrypoint's window, anyone who reads the secrets from the
    ///      mempool could front-run the ragequit with a relayed withdrawal to an address of their choosing.
    /// @param value The note's value.
    /// @param label The note's label.
    /// @param nullifier The note's nullifier.
    /// @param secret The note's secret.
    /// @param path The note commitment's path in the state tree, to an accepted root.
    function ragequit(uint256 value, uint256 label, uint256 nullifier, uint256 secret, StatePath calldata path)
        external;

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice A state root stays accepted while it is one of the last ROOT_HISTORY_SIZE recorded...
    function ROOT_HISTORY_SIZE() external view returns (uint256);

    /// @notice ...or was recorded less than ROOT_MIN_LIFETIME_BLOCKS blocks ago, however many roots followed it:
    ///         a flood of deposits in one block cannot evict the root a proof in flight uses.
    function ROOT_MIN_LIFETIME_BLOCKS() external view returns (uint256);

    /// @notice The entrypoint, the only caller of deposit and withdraw.
    function ENTRYPOINT() external view returns (address);

    /// @notice The verifier of batches of withdrawal proofs (withdrawBatch).
    function WITHDRAWAL_BATCH_VERIFIER() external view returns (IWithdrawalBatchVerifier);

    /// @notice The pooled ERC20 asset.
    function ASSET() external view returns (IERC20);

    /// @notice keccak256(abi.encodePacked(address(this), block.chainid, ASSET)) % SNARK_SCALAR_FIELD.
    function SCOPE() external view returns (uint256);

    /// @notice Number of deposits so far; the next deposit's label uses nonce + 1.
    function nonce() external view returns (uint256);

    /// @notice ERC-1271: the pool signs nothing itself; it answers for exactly the EIP-3009 transfers from the pool
    ///         that its relays authorized (IEntrypoint.PoolAuthorization), each until it is refunded.
    /// @param digest The token's EIP-712 digest of the transfer.
    /// @param signature abi.encode(nullifierHash, refundAnchor) of the relay that authorized it (64 bytes).
    /// @return The ERC-1271 magic value 0x1626ba7e when the note of `nullifierHash` was spent to authorize exactly
    ///         `digest` under `refundAnchor`; 0xffffffff for anything else.
    function isValidSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4);

    /// @notice The original depositor of `label`, or the zero address for an unknown label.
    function depositorOf(uint256 label) external view returns (address);

    /// @notice Whether the note with this nullifier hash has been spent.
    function isNullifierSpent(uint256 nullifierHash) external view returns (bool);

    /// @notice What the slot of this nullifier hash holds (SpendRecord): zero while unspent.
    function spendRecordOf(uint256 nullifierHash) external view returns (bytes32);

    /// @notice What the pool owes `feeRecipient`: the fees its withdrawals accrued, not yet claimed, with the unit
    ///         an earlier claim kept (claimFees pays all of it but that unit).
    function accruedFeesOf(address feeRecipient) external view returns (uint256);

    /// @notice Whether a withdrawal proof may use `root`: one of the last ROOT_HISTORY_SIZE state roots, or one
    ///         recorded less than ROOT_MIN_LIFETIME_BLOCKS blocks ago.
    function isKnownStateRoot(uint256 root) external view returns (bool);

    /// @notice The number of leaves of the state tree when `root` was its root, while `root` is accepted; else 0.
    ///         What a withdrawal names as its stateTreeSize.
    function stateTreeSizeAt(uint256 root) external view returns (uint256);

    /// @notice The depth of the state tree when `root` was its root, while `root` is accepted; else 0.
    function stateTreeDepthAt(uint256 root) external view returns (uint256);

    /// @notice The current root of the state tree (0 while it is empty).
    function currentRoot() external view returns (uint256);

    /// @notice Number of leaves in the state tree.
    function currentTreeSize() external view returns (uint256);

    /// @notice Depth of the state tree.
    function currentTreeDepth() external view returns (uint256);
}

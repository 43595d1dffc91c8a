// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {SNARK_SCALAR_FIELD} from "@zk-kit/lean-imt.sol/Constants.sol";
import {PoseidonT2} from "poseidon-solidity/PoseidonT2.sol";
import {IPrivacyPool} from "./interfaces/IPrivacyPool.sol";
import {IWithdrawalBatchVerifier} from "./interfaces/IWithdrawalBatchVerifier.sol";
import {ProofLib} from "./lib/ProofLib.sol";
import {SpendRecord} from "./lib/SpendRecord.sol";
import {PoseidonT3} from "./lib/poseidon/PoseidonT3.sol";
import {PoseidonT4} from "./lib/poseidon/PoseidonT4.sol";
import {StateTree} from "./lib/StateTree.sol";
import {WithdrawalVerifier} from "./verifiers/WithdrawalVerifier.sol";

/// @title PrivacyPool
/// @notice The pool of one ERC20 asset: a LeanIMT state tree of note commitments with the history of its roots
///         (StateTree) and the set of spent nullifier hashes. A single withdrawal's proof is checked by the inlined
///         WithdrawalVerifier (no call to a verifier contract); a batch's by the WithdrawalBatchVerifier contract. The
///         Poseidon libraries of deposits and ragequits are linked at deployment, not inlined, which keeps the pool
///         under the contract size limit.
contract PrivacyPool is IPrivacyPool {
    using SafeERC20 for IERC20;
    using StateTree for StateTree.Data;
    using ProofLib for ProofLib.WithdrawProof;

    /// @inheritdoc IPrivacyPool
    uint256 public constant ROOT_HISTORY_SIZE = StateTree.SIZE;
    /// @inheritdoc IPrivacyPool
    uint256 public constant ROOT_MIN_LIFETIME_BLOCKS = StateTree.MIN_LIFETIME_BLOCKS;
    uint256 private constant NOTE_VALUE_LIMIT = 1 << 128;
    /// @dev abi.encode(nullifierHash, refundAnchor): what the pool's authorizations are signed with (isValidSignature).
    uint256 private constant AUTHORIZATION_SIGNATURE_LENGTH = 64;
    bytes4 private constant INVALID_SIGNATURE = 0xffffffff;

    /// @inheritdoc IPrivacyPool
    address public immutable ENTRYPOINT;
    /// @inheritdoc IPrivacyPool
    IWithdrawalBatchVerifier public immutable WITHDRAWAL_BATCH_VERIFIER;
    /// @inheritdoc IPrivacyPool
    IERC20 public immutable ASSET;
    /// @inheritdoc IPrivacyPool
    uint256 public immutable SCOPE;

    /// @inheritdoc IPrivacyPool
    uint256 public nonce;
    StateTree.Data private _stateTree;
    /// @dev SpendRecord: zero while unspent, else what the spend paid (a refund checks it against its payment).
    mapping(uint256 nullifierHash => bytes32) private _spendRecords;
    mapping(uint256 label => address) private _depositors;
    /// @dev Fees accrued per fee recipient, with the one unit a claim keeps (see claimFees).
    mapping(address feeRecipient => uint256) private _accruedFees;

    modifier onlyEntrypoint() {
        if (msg.sender != ENTRYPOINT) revert OnlyEntrypoint();
        _;
    }

    constructor(address entrypoint, IWithdrawalBatchVerifier batchVerifier, IERC20 asset) {
        if (entrypoint == address(0) || address(batchVerifier) == address(0) || address(asset) == address(0)) {
            revert ZeroAddress();
        }
        ENTRYPOINT = entrypoint;
        WITHDRAWAL_BATCH_VERIFIER = batchVerifier;
        ASSET = asset;
        SCOPE = uint256(keccak256(abi.encodePacked(address(this), block.chainid, asset))) % SNARK_SCALAR_FIELD;
        _stateTree.initialize();
    }

    /*//////////////////////////////////////////////////////////////
                                 LOGIC
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IPrivacyPool
    function deposit(address depositor, uint256 value, uint256 precommitment)
        external
        onlyEntrypoint
        returns (uint256 commitment)
    {
        if (value >= NOTE_VALUE_LIMIT) revert ValueAboveNoteLimit();
        uint256 label = uint256(keccak256(abi.encodePacked(SCOPE, ++nonce))) % SNARK_SCALAR_FIELD;
        _depositors[label] = depositor;
        commitment = PoseidonT4.hash(value, label, precommitment);
        _insert(commitment);
        emit Deposited(depositor, commitment, label, value, precommitment);
    }

    /// @inheritdoc IPrivacyPool
    function withdraw(ProofLib.WithdrawProof calldata proof, uint256 stateTreeSize, Payout calldata payout)
        external
        onlyEntrypoint
    {
        _checkWithdrawal(proof, stateTreeSize);
        uint256 nullifierHash = proof.nullifierHash();
        if (_spendRecords[nullifierHash] != 0) revert NullifierAlreadySpent();
        _spendRecords[nullifierHash] = payout.spendRecord;
        if (!WithdrawalVerifier.verifyProof(proof.pA, proof.pB, proof.pC, proof.pubSignals)) revert InvalidProof();

        // Inserted even when the whole note is withdrawn: the change note then holds 0, which is harmless and keeps
        // every withdrawal alike on chain.
        _insert(proof.newCommitment());
        _payRecipient(proof, payout.recipient, payout.feeAmount);
        if (payout.feeAmount != 0) _accruedFees[payout.feeRecipient] += payout.feeAmount;
    }

    /// @inheritdoc IPrivacyPool
    function withdrawBatch(
        ProofLib.WithdrawProof[] calldata proofs,
        uint256[] calldata stateTreeSizes,
        Payout[] calldata payouts
    ) external onlyEntrypoint {
        (bool[] memory skipped, uint256 paying) = _spendBatch(proofs, stateTreeSizes, payouts);
        if (paying == 0) return;
        if (!_verifyPaying(proofs, skipped, paying)) revert InvalidProof();
        _insertChangeNotes(proofs, skipped, paying);
        for (uint256 i; i < proofs.length; ++i) {
            if (!skipped[i]) _payRecipient(proofs[i], payouts[i].recipient, payouts[i].feeAmount);
        }
        _accrueFees(payouts, skipped);
    }

    /// @inheritdoc IPrivacyPool
    function depositRefund(uint256 originNullifierHash, bytes32 paymentRecord, uint256 value, uint256 refundAnchor)
        external
        onlyEntrypoint
        returns (uint256 commitment)
    {
        bytes32 record = _spendRecords[originNullifierHash];
        if (record == SpendRecord.REFUNDED) revert OriginAlreadyRefunded();
        if (record != paymentRecord || record == 0 || record == SpendRecord.PLAIN) revert RefundNotRecorded();
        _spendRecords[originNullifierHash] = SpendRecord.REFUNDED;
        commitment = PoseidonT3.hash(value, refundAnchor);
        _insert(commitment);
    }

    /// @inheritdoc IPrivacyPool
    function claimFees(address feeRecipient) external returns (uint256 claimed) {
        uint256 accrued = _accruedFees[feeRecipient];
        if (accrued <= 1) revert NoFeesToClaim();
        _accruedFees[feeRecipient] = 1;
        claimed = accrued - 1;
        ASSET.safeTransfer(feeRecipient, claimed);
        emit FeesClaimed(feeRecipient, claimed);
    }

    /// @inheritdoc IPrivacyPool
    function ragequit(uint256 value, uint256 label, uint256 nullifier, uint256 secret, StatePath calldata path)
        external
    {
        if (msg.sender != _depositors[label]) revert OnlyOriginalDepositor();
        uint256 commitment = PoseidonT4.hash(value, label, PoseidonT3.hash(nullifier, secret));
        if (path.siblings.length != StateTree.depthFor(path.stateTreeSize)) revert StateTreeDepthMismatch();
        uint256 root = StateTree.rootOfPath(commitment, path.leafIndex, path.siblings);
        if (!_stateTree.isAccepted(root, path.stateTreeSize)) revert CommitmentNotInStateTree();
        uint256 nullifierHash = PoseidonT2.hash([nullifier]);
        if (_spendRecords[nullifierHash] != 0) revert NullifierAlreadySpent();

        _spendRecords[nullifierHash] = SpendRecord.PLAIN;
        ASSET.safeTransfer(msg.sender, value);
        emit Ragequit(msg.sender, commitment, label, value, nullifierHash);
    }

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IPrivacyPool
    function isValidSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != AUTHORIZATION_SIGNATURE_LENGTH) return INVALID_SIGNATURE;
        (uint256 nullifierHash, uint256 refundAnchor) = abi.decode(signature, (uint256, uint256));
        if (_spendRecords[nullifierHash] != SpendRecord.authorized(digest, refundAnchor)) return INVALID_SIGNATURE;
        return this.isValidSignature.selector;
    }

    /// @inheritdoc IPrivacyPool
    function depositorOf(uint256 label) external view returns (address) {
        return _depositors[label];
    }

    /// @inheritdoc IPrivacyPool
    function isNullifierSpent(uint256 nullifierHash) external view returns (bool) {
        return _spendRecords[nullifierHash] != 0;
    }

    /// @inheritdoc IPrivacyPool
    function spendRecordOf(uint256 nullifierHash) external view returns (bytes32) {
        return _spendRecords[nullifierHash];
    }

    /// @inheritdoc IPrivacyPool
    function accruedFeesOf(address feeRecipient) external view returns (uint256) {
        return _accruedFees[feeRecipient];
    }

    /// @inheritdoc IPrivacyPool
    function isKnownStateRoot(uint256 root) external view returns (bool) {
        return _stateTree.ordinalOf(root) != 0;
    }

    /// @inheritdoc IPrivacyPool
    function stateTreeSizeAt(uint256 root) external view returns (uint256) {
        return _stateTree.ordinalOf(root);
    }

    /// @inheritdoc IPrivacyPool
    function stateTreeDepthAt(uint256 root) external view returns (uint256) {
        return StateTree.depthFor(_stateTree.ordinalOf(root));
    }

    /// @inheritdoc IPrivacyPool
    function currentRoot() external view returns (uint256) {
        return _stateTree.root();
    }

    /// @inheritdoc IPrivacyPool
    function currentTreeSize() external view returns (uint256) {
        return _stateTree.size;
    }

    /// @inheritdoc IPrivacyPool
    function currentTreeDepth() external view returns (uint256) {
        return _stateTree.depth;
    }

    /*//////////////////////////////////////////////////////////////
                                INTERNAL
    //////////////////////////////////////////////////////////////*/

    /// @dev The checks of a withdrawal that need neither its nullifier nor proof verification: state root and depth.
    ///      The entrypoint checked the context against the withdrawal and this pool's scope.
    function _checkWithdrawal(ProofLib.WithdrawProof calldata proof, uint256 stateTreeSize) private view {
        if (!_stateTree.isAccepted(proof.stateRoot(), stateTreeSize)) revert UnknownStateRoot();
        // One path per leaf: the circuit ties the path to the declared depth, the pool ties the depth to the root.
        if (proof.stateTreeDepth() != StateTree.depthFor(stateTreeSize)) revert StateTreeDepthMismatch();
    }

    /// @dev Checks and spends each withdrawal of a batch, skipping (and naming) those whose note is already spent.
    function _spendBatch(
        ProofLib.WithdrawProof[] calldata proofs,
        uint256[] calldata stateTreeSizes,
        Payout[] calldata payouts
    ) private returns (bool[] memory skipped, uint256 paying) {
        skipped = new bool[](proofs.length);
        for (uint256 i; i < proofs.length; ++i) {
            uint256 nullifierHash = proofs[i].nullifierHash();
            if (_spendRecords[nullifierHash] != 0) {
                skipped[i] = true;
                emit WithdrawalSkipped(nullifierHash);
                continue;
            }
            _checkWithdrawal(proofs[i], stateTreeSizes[i]);
            _spendRecords[nullifierHash] = payouts[i].spendRecord;
            ++paying;
        }
    }

    /// @dev Inserts the change notes of a batch's paid withdrawals at once; their LeafInserted events all carry the
    ///      root after the last.
    function _insertChangeNotes(ProofLib.WithdrawProof[] calldata proofs, bool[] memory skipped, uint256 paying) private {
        uint256[] memory newCommitments = new uint256[](paying);
        uint256 next;
        for (uint256 i; i < proofs.length; ++i) {
            if (!skipped[i]) newCommitments[next++] = proofs[i].newCommitment();
        }
        uint256 firstLeafIndex = _stateTree.size;
        uint256 root = _stateTree.insertMany(newCommitments);
        for (uint256 i; i < paying; ++i) {
            emit LeafInserted(firstLeafIndex + i, newCommitments[i], root);
        }
    }

    /// @dev Verifies the proofs of a batch that are not skipped: the calldata array as it is when none is.
    function _verifyPaying(ProofLib.WithdrawProof[] calldata proofs, bool[] memory skipped, uint256 paying)
        private
        view
        returns (bool)
    {
        if (paying == proofs.length) return WITHDRAWAL_BATCH_VERIFIER.verifyProofs(proofs);
        ProofLib.WithdrawProof[] memory kept = new ProofLib.WithdrawProof[](paying);
        uint256 next;
        for (uint256 i; i < proofs.length; ++i) {
            if (!skipped[i]) kept[next++] = proofs[i];
        }
        return WITHDRAWAL_BATCH_VERIFIER.verifyProofs(kept);
    }

    /// @dev Pays a spent note's withdrawn value less its fee to the recipient and says so (Withdrawn). A payout to the
    ///      pool itself stays: it is the transfer the spend record authorizes (isValidSignature).
    function _payRecipient(ProofLib.WithdrawProof calldata proof, address recipient, uint256 feeAmount) private {
        uint256 withdrawnValue = proof.withdrawnValue();
        if (recipient != address(this)) ASSET.safeTransfer(recipient, withdrawnValue - feeAmount);
        emit Withdrawn(withdrawnValue, proof.nullifierHash(), proof.newCommitment());
    }

    /// @dev Accrues the fees of a batch's paid withdrawals: one write per run of payouts to the same fee recipient.
    function _accrueFees(Payout[] calldata payouts, bool[] memory skipped) private {
        address feeRecipient;
        uint256 fees;
        for (uint256 i; i < payouts.length; ++i) {
            if (skipped[i]) continue;
            if (payouts[i].feeRecipient != feeRecipient) {
                if (fees != 0) _accruedFees[feeRecipient] += fees;
                (feeRecipient, fees) = (payouts[i].feeRecipient, 0);
            }
            fees += payouts[i].feeAmount;
        }
        if (fees != 0) _accruedFees[feeRecipient] += fees;
    }

    function _insert(uint256 leaf) private {
        uint256 leafIndex = _stateTree.size;
        emit LeafInserted(leafIndex, leaf, _stateTree.insert(leaf));
    }
}

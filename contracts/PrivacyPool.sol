// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {SNARK_SCALAR_FIELD} from "@zk-kit/lean-imt.sol/Constants.sol";
import {PoseidonT2} from "poseidon-solidity/PoseidonT2.sol";
import {IPrivacyPool} from "./interfaces/IPrivacyPool.sol";
import {IWithdrawalVerifier} from "./interfaces/IWithdrawalVerifier.sol";
import {ProofLib} from "./lib/ProofLib.sol";
import {PoseidonT3} from "./lib/poseidon/PoseidonT3.sol";
import {PoseidonT4} from "./lib/poseidon/PoseidonT4.sol";
import {StateTree} from "./lib/StateTree.sol";

/// @title PrivacyPool
/// @notice The pool of one ERC20 asset: a LeanIMT state tree of note commitments with the history of its roots
///         (StateTree) and the set of spent nullifier hashes. The Poseidon libraries are linked at deployment, not
///         inlined, which keeps the pool under the contract size limit.
contract PrivacyPool is IPrivacyPool {
    using SafeERC20 for IERC20;
    using StateTree for StateTree.Data;
    using ProofLib for ProofLib.WithdrawProof;

    /// @inheritdoc IPrivacyPool
    uint256 public constant ROOT_HISTORY_SIZE = StateTree.SIZE;
    /// @inheritdoc IPrivacyPool
    uint256 public constant ROOT_MIN_LIFETIME_BLOCKS = StateTree.MIN_LIFETIME_BLOCKS;
    uint256 private constant NOTE_VALUE_LIMIT = 1 << 128;

    /// @inheritdoc IPrivacyPool
    address public immutable ENTRYPOINT;
    /// @inheritdoc IPrivacyPool
    IWithdrawalVerifier public immutable WITHDRAWAL_VERIFIER;
    /// @inheritdoc IPrivacyPool
    IERC20 public immutable ASSET;
    /// @inheritdoc IPrivacyPool
    uint256 public immutable SCOPE;

    /// @inheritdoc IPrivacyPool
    uint256 public nonce;
    StateTree.Data private _stateTree;
    mapping(uint256 nullifierHash => bool) private _spentNullifierHashes;
    mapping(uint256 label => address) private _depositors;

    modifier onlyEntrypoint() {
        if (msg.sender != ENTRYPOINT) revert OnlyEntrypoint();
        _;
    }

    constructor(address entrypoint, IWithdrawalVerifier verifier, IERC20 asset) {
        if (entrypoint == address(0) || address(verifier) == address(0) || address(asset) == address(0)) {
            revert ZeroAddress();
        }
        ENTRYPOINT = entrypoint;
        WITHDRAWAL_VERIFIER = verifier;
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
    function withdraw(
        Withdrawal calldata withdrawal,
        ProofLib.WithdrawProof calldata proof,
        uint256 stateTreeSize,
        address recipient,
        address feeRecipient,
        uint256 feeAmount
    ) external onlyEntrypoint {
        if (proof.context() != uint256(keccak256(abi.encode(withdrawal, SCOPE))) % SNARK_SCALAR_FIELD) {
            revert ContextMismatch();
        }
        if (!_stateTree.isAccepted(proof.stateRoot(), stateTreeSize)) revert UnknownStateRoot();
        // One path per leaf: the circuit ties the path to the declared depth, the pool ties the depth to the root.
        if (proof.stateTreeDepth() != StateTree.depthFor(stateTreeSize)) revert StateTreeDepthMismatch();
        uint256 nullifierHash = proof.nullifierHash();
        if (_spentNullifierHashes[nullifierHash]) revert NullifierAlreadySpent();
        if (!WITHDRAWAL_VERIFIER.verifyProof(proof.pA, proof.pB, proof.pC, proof.pubSignals)) revert InvalidProof();

        _spentNullifierHashes[nullifierHash] = true;
        // Inserted even when the whole note is withdrawn: the change note then holds 0, which is harmless and keeps
        // every withdrawal alike on chain.
        uint256 newCommitment = proof.newCommitment();
        _insert(newCommitment);
        uint256 withdrawnValue = proof.withdrawnValue();
        ASSET.safeTransfer(recipient, withdrawnValue - feeAmount);
        if (feeAmount != 0) ASSET.safeTransfer(feeRecipient, feeAmount);
        emit Withdrawn(withdrawal.processooor, withdrawnValue, nullifierHash, newCommitment);
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
        if (_spentNullifierHashes[nullifierHash]) revert NullifierAlreadySpent();

        _spentNullifierHashes[nullifierHash] = true;
        ASSET.safeTransfer(msg.sender, value);
        emit Ragequit(msg.sender, commitment, label, value, nullifierHash);
    }

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IPrivacyPool
    function depositorOf(uint256 label) external view returns (address) {
        return _depositors[label];
    }

    /// @inheritdoc IPrivacyPool
    function isNullifierSpent(uint256 nullifierHash) external view returns (bool) {
        return _spentNullifierHashes[nullifierHash];
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

    function _insert(uint256 leaf) private {
        uint256 leafIndex = _stateTree.size;
        emit LeafInserted(leafIndex, leaf, _stateTree.insert(leaf));
    }
}

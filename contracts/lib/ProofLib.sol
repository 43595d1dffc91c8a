// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title ProofLib
/// @notice The one place that names the withdrawal circuit's public signals. Their order is fixed by the circuit
///         (circuits/withdraw.circom) and mirrored by sdk/circuit/public-signals.ts:
///         [0 newCommitment, 1 nullifierHash, 2 refundAnchor, 3 valueFeeAndDepths, 4 stateRoot, 5 aspRoot,
///         6 context]. valueFeeAndDepths packs withdrawnValue (bits 0-127), stateTreeDepth (bits 128-135),
///         aspTreeDepth (bits 136-143) and relayFeeBPS (bits 144 and up); the circuit range checks each part, so a
///         verified proof's parts are what was proven.
library ProofLib {
    uint256 private constant VALUE_MASK = (1 << 128) - 1;
    uint256 private constant PACKED = 3;

    /// @notice A Groth16 proof of the withdrawal circuit with its public signals, in snarkjs' calldata layout.
    struct WithdrawProof {
        uint256[2] pA;
        uint256[2][2] pB;
        uint256[2] pC;
        uint256[7] pubSignals;
    }

    /// @notice Commitment of the change note, inserted into the state tree.
    function newCommitment(WithdrawProof calldata proof) internal pure returns (uint256) {
        return proof.pubSignals[0];
    }

    /// @notice Nullifier hash of the spent note.
    function nullifierHash(WithdrawProof calldata proof) internal pure returns (uint256) {
        return proof.pubSignals[1];
    }

    /// @notice Poseidon(label, refundPrecommitment): the spent note's label under a refund precommitment its owner chose.
    ///         A refund of `value` (the whole payout, or the part of it that came back) is the note Poseidon(value,
    ///         refundAnchor), which the pool inserts (PrivacyPool.depositRefund).
    function refundAnchor(WithdrawProof calldata proof) internal pure returns (uint256) {
        return proof.pubSignals[2];
    }

    /// @notice Amount leaving the pool, in the asset's atomic units.
    function withdrawnValue(WithdrawProof calldata proof) internal pure returns (uint256) {
        return proof.pubSignals[PACKED] & VALUE_MASK;
    }

    /// @notice Depth of the state tree under `stateRoot`.
    function stateTreeDepth(WithdrawProof calldata proof) internal pure returns (uint256) {
        return (proof.pubSignals[PACKED] >> 128) & 0xff;
    }

    /// @notice Depth of the ASP tree under `aspRoot`.
    function aspTreeDepth(WithdrawProof calldata proof) internal pure returns (uint256) {
        return (proof.pubSignals[PACKED] >> 136) & 0xff;
    }

    /// @notice The relay fee in basis points the proof's owner agreed to (the relay data's must be the same).
    function relayFeeBPS(WithdrawProof calldata proof) internal pure returns (uint256) {
        return proof.pubSignals[PACKED] >> 144;
    }

    /// @notice State tree root the spent note was proven against.
    function stateRoot(WithdrawProof calldata proof) internal pure returns (uint256) {
        return proof.pubSignals[4];
    }

    /// @notice ASP root the note's label was proven against.
    function aspRoot(WithdrawProof calldata proof) internal pure returns (uint256) {
        return proof.pubSignals[5];
    }

    /// @notice keccak256(abi.encode(withdrawal, scope)) % SNARK_SCALAR_FIELD, binding recipient, fee and payment.
    function context(WithdrawProof calldata proof) internal pure returns (uint256) {
        return proof.pubSignals[6];
    }
}

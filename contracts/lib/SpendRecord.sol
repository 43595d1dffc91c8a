// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title SpendRecord
/// @notice What the pool keeps in a spent nullifier hash's slot, the one slot a withdrawal writes anyway: zero while
///         the note is unspent; PLAIN for a spend that leaves nothing to return (a ragequit, a RelayData relay, an
///         access fee); for a relay that paid a seller straight from the pool (IEntrypoint.SellerPayment), the proof's
///         context, which binds the seller's terms: never refundable, and how anyone recognizes the payment by its
///         effect; for a relay that made the pool an `exact` seller's payer (IEntrypoint.PoolAuthorization),
///         `authorized`: the one EIP-3009 transfer the pool's isValidSignature answers for, until it is refunded; for a
///         relay that opened a private tab (IEntrypoint.TabOpening), the hash of its IEntrypoint.TabRecord, which the
///         tab's withdrawal and the one return of its rest present; REFUNDED once what the payment left came back as the
///         agent's refund note.
library SpendRecord {
    bytes32 internal constant PLAIN = bytes32(uint256(1));
    bytes32 internal constant REFUNDED = bytes32(uint256(2));

    /// @dev The record of a pool authorization: the token's EIP-712 digest of the transfer, and the proof's refund
    ///      anchor that an unused one comes back under. Its signature to the token is abi.encode(nullifierHash,
    ///      refundAnchor), from which the pool finds the record again.
    function authorized(bytes32 digest, uint256 refundAnchor) internal pure returns (bytes32) {
        return keccak256(abi.encode(digest, refundAnchor));
    }
}

pragma circom 2.1.9;

include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";
include "./commitment.circom";
include "./lean_imt.circom";

// Withdraw
//
// Spends a note of the privacy pool, partially or fully, and creates its change note (docs/design.md section 3).
//
// Public signals, in snarkjs order (outputs first, then public inputs in declaration order):
//   [newCommitment, nullifierHash, refundAnchor, valueFeeAndDepths, stateRoot, aspRoot, context]
// The same order is mirrored by contracts/lib/ProofLib.sol and sdk/circuit/public-signals.ts. The withdrawn value,
// the relay fee and the two tree depths travel packed in one public input: every public input costs the verifier an
// elliptic-curve multiplication (~6k gas), and these four fit in 158 bits.
//
// Parameters: maxTreeDepth, the largest depth of the state and ASP trees (sdk/circuit/circuit.config.json).
template Withdraw(maxTreeDepth) {
    // ---- public inputs ----
    signal input valueFeeAndDepths; // withdrawnValue + stateTreeDepth * 2^128 + aspTreeDepth * 2^136
                                    //   + relayFeeBPS * 2^144
    signal input stateRoot;         // a root of the pool's state tree (the contract checks its history)
    signal input aspRoot;           // a root of the ASP tree of approved labels (the entrypoint checks it)
    signal input context;           // keccak256(withdrawal, scope) % FIELD: binds recipient, fee and payment terms

    // ---- private inputs ----
    signal input withdrawnValue;                 // amount leaving the pool, atomic USDC (packed, public)
    signal input stateTreeDepth;                 // depth of the state tree under stateRoot (packed, public)
    signal input aspTreeDepth;                   // depth of the ASP tree under aspRoot (packed, public)
    signal input relayFeeBPS;                    // the relay fee in basis points, at most 10000 (packed, public)
    signal input refundPrecommitment;            // Poseidon(nullifier, secret) of the refund note; must hide
    signal input label;                          // label of the spent note (kept by the change note)
    signal input existingIsRefund;               // 1 when the spent note is a refund note (its leaf's form), else 0
    signal input existingValue;                  // value of the spent note
    signal input existingNullifier;
    signal input existingSecret;
    signal input newNullifier;                   // change note secrets
    signal input newSecret;
    signal input stateIndex;                     // leaf index of the spent commitment
    signal input stateSiblings[maxTreeDepth];
    signal input aspIndex;                       // leaf index of the label in the ASP tree
    signal input aspSiblings[maxTreeDepth];

    // ---- outputs ----
    signal output newCommitment;   // change note commitment, inserted by the pool
    signal output nullifierHash;   // marks the spent note
    signal output refundAnchor;    // what a refund of any part of the payout is made from: same label

    // 1. The spent note is well formed; its nullifier hash is revealed.
    component existing = CommitmentHasher();
    existing.value <== existingValue;
    existing.label <== label;
    existing.nullifier <== existingNullifier;
    existing.secret <== existingSecret;
    nullifierHash <== existing.nullifierHash;

    // 2. Its leaf is in the state tree: its commitment, or, for a refund note, Poseidon(value, anchor) with the anchor
    //    of its label and precommitment (commitment.circom). Either way the label is the one step 3 checks.
    existingIsRefund * (existingIsRefund - 1) === 0;
    signal existingAnchor <== RefundAnchor()(label, existing.precommitment);
    signal existingRefundLeaf <== Poseidon(2)([existingValue, existingAnchor]);
    signal existingLeaf <== existing.commitment + existingIsRefund * (existingRefundLeaf - existing.commitment);
    signal provenStateRoot <== LeanIMTInclusionProof(maxTreeDepth)(
        existingLeaf, stateIndex, stateSiblings, stateTreeDepth
    );
    provenStateRoot === stateRoot;

    // 3. Its label is a leaf of the ASP tree.
    signal provenAspRoot <== LeanIMTInclusionProof(maxTreeDepth)(label, aspIndex, aspSiblings, aspTreeDepth);
    provenAspRoot === aspRoot;

    // 4. Amounts: both values fit in 128 bits, 0 < withdrawnValue <= existingValue.
    signal existingValueBits[128] <== Num2Bits(128)(existingValue);
    signal withdrawnValueBits[128] <== Num2Bits(128)(withdrawnValue);
    signal withdrawnIsZero <== IsZero()(withdrawnValue);
    withdrawnIsZero === 0;
    signal withinValue <== LessEqThan(128)([withdrawnValue, existingValue]);
    withinValue === 1;
    signal remainingValue <== existingValue - withdrawnValue;

    // 5. The change note gets a fresh nullifier, so its nullifier hash differs from the spent one.
    signal nullifierReused <== IsEqual()([existingNullifier, newNullifier]);
    nullifierReused === 0;

    // 6. The change note keeps the label and holds the remaining value.
    component change = CommitmentHasher();
    change.value <== remainingValue;
    change.label <== label;
    change.nullifier <== newNullifier;
    change.secret <== newSecret;
    newCommitment <== change.commitment;

    // 7. The refund anchor: a payout that comes back into the pool, whole or in part (a tab's rest after the
    //    seller's claims), becomes the note Poseidon(value, refundAnchor), which keeps the spent note's label, so the
    //    refund is approved or excluded with its origin. The pool supplies the value, which it learns only then; the
    //    recipient is paid withdrawnValue - floor(withdrawnValue * relayFeeBPS / 10000), as the entrypoint computes it.
    refundAnchor <== RefundAnchor()(label, refundPrecommitment);
    signal relayFeeBits[14] <== Num2Bits(14)(relayFeeBPS);
    signal feeWithinDenominator <== LessEqThan(14)([relayFeeBPS, 10000]);
    feeWithinDenominator === 1;

    // 8. Pack the withdrawn value, the depths and the fee into their public input. The parts are range checked (the
    //    value to 128 bits in step 4, each depth to [0, maxTreeDepth] by its inclusion proof with maxTreeDepth < 2^8,
    //    the fee to 14 bits in step 7), so each packed value has exactly one decomposition.
    assert(maxTreeDepth < 256);
    valueFeeAndDepths === withdrawnValue + stateTreeDepth * 2**128 + aspTreeDepth * 2**136 + relayFeeBPS * 2**144;

    // 9. Bind the context. It takes part in no other constraint, and a public input that appears in no
    //    constraint could be changed after proving; squaring it puts it in the constraint system.
    signal contextSquared <== context * context;
}

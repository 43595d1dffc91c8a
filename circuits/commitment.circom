pragma circom 2.1.9;

include "circomlib/circuits/poseidon.circom";

// CommitmentHasher
//
// The note scheme of docs/design.md section 2 (compatible with Privacy Pools v1):
//   precommitment = Poseidon(nullifier, secret)
//   commitment    = Poseidon(value, label, precommitment)
//   nullifierHash = Poseidon(nullifier)
// The range of `value` is not checked here; the caller decides which values are admissible. A refund note's leaf is
// made another way (RefundAnchor); the precommitment is an output so that its spender can build that leaf too.
template CommitmentHasher() {
    // ---- private inputs ----
    signal input value;      // note balance in atomic USDC
    signal input label;      // label assigned by the pool at deposit
    signal input nullifier;  // bearer secret; its hash is revealed when the note is spent
    signal input secret;     // bearer secret; never revealed

    // ---- outputs ----
    signal output commitment;
    signal output nullifierHash;
    signal output precommitment;

    precommitment <== Poseidon(2)([nullifier, secret]);
    commitment <== Poseidon(3)([value, label, precommitment]);
    nullifierHash <== Poseidon(1)([nullifier]);
}

// RefundAnchor
//
// What a refund note is made from (docs/design.md section 2): anchor = Poseidon(label, precommitment), and the note
// of a refund of `value` is the leaf Poseidon(value, anchor). The pool inserts that leaf for whatever value comes
// back, which it learns only then (a tab's rest after the seller's claims), without learning the label: the
// precommitment hides it.
template RefundAnchor() {
    signal input label;
    signal input precommitment;
    signal output anchor;

    anchor <== Poseidon(2)([label, precommitment]);
}

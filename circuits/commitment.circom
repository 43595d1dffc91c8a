pragma circom 2.1.9;

include "circomlib/circuits/poseidon.circom";

// CommitmentHasher
//
// The note scheme of docs/design.md section 2 (compatible with Privacy Pools v1):
//   precommitment = Poseidon(nullifier, secret)
//   commitment    = Poseidon(value, label, precommitment)
//   nullifierHash = Poseidon(nullifier)
// The range of `value` is not checked here; the caller decides which values are admissible.
template CommitmentHasher() {
    // ---- private inputs ----
    signal input value;      // note balance in atomic USDC
    signal input label;      // label assigned by the pool at deposit
    signal input nullifier;  // bearer secret; its hash is revealed when the note is spent
    signal input secret;     // bearer secret; never revealed

    // ---- outputs ----
    signal output commitment;
    signal output nullifierHash;

    signal precommitment <== Poseidon(2)([nullifier, secret]);
    commitment <== Poseidon(3)([value, label, precommitment]);
    nullifierHash <== Poseidon(1)([nullifier]);
}

pragma circom 2.1.9;

include "poseidon2_constants.circom";

// Poseidon2 (eprint 2023/323) over BN254 with t = 3: S-box x^5, 8 external and 56 internal rounds, the round
// constants of HorizenLabs' poseidon2_instance_bn256.rs. The same function as sdk/crypto/poseidon2.ts and
// contracts/lib/poseidon/Poseidon2T3.sol.
//
// Only the 80 S-boxes cost constraints, three each: the linear layers (external circ(2, 1, 1), internal
// [[2,1,1],[1,2,1],[1,1,3]]) and the round constants are carried as linear combinations of the S-box outputs.
// That is as many constraints as circomlib's Poseidon(2) (also 80 S-boxes that are not constant at this width):
// Poseidon2's gain at t = 3 is outside the circuit, in the contract's gas and the SDK's hashing time.

// x^5 in three constraints.
template Poseidon2Sbox() {
    signal input in;
    signal output out;

    signal x2 <== in * in;
    signal x4 <== x2 * x2;
    out <== x4 * in;
}

// Poseidon2Permutation: the permutation of three field elements.
template Poseidon2Permutation() {
    signal input in[3];
    signal output out[3];

    var EXTERNAL[8][3] = POSEIDON2_T3_EXTERNAL();
    var INTERNAL[56] = POSEIDON2_T3_INTERNAL();

    // The state, as linear combinations of the inputs and the S-box outputs.
    var s[3];
    var sum = in[0] + in[1] + in[2];
    for (var i = 0; i < 3; i++) {
        s[i] = in[i] + sum;
    }

    // External rounds: add constants to all words, S-box all, then s_i := s_i + sum.
    signal external[8][3];
    // Internal rounds: add the constant to the first word, S-box it, then s_i := d_i s_i + sum, d = (1, 1, 2).
    signal internal[56];
    for (var r = 0; r < 8; r++) {
        if (r == 4) {
            for (var k = 0; k < 56; k++) {
                internal[k] <== Poseidon2Sbox()(s[0] + INTERNAL[k]);
                sum = internal[k] + s[1] + s[2];
                s[0] = internal[k] + sum;
                s[1] = s[1] + sum;
                s[2] = 2 * s[2] + sum;
            }
        }
        for (var i = 0; i < 3; i++) {
            external[r][i] <== Poseidon2Sbox()(s[i] + EXTERNAL[r][i]);
        }
        sum = external[r][0] + external[r][1] + external[r][2];
        for (var i = 0; i < 3; i++) {
            s[i] = external[r][i] + sum;
        }
    }

    for (var i = 0; i < 3; i++) {
        out[i] <== s[i];
    }
}

// Poseidon2Hash2: the Merkle tree's 2-to-1 compression, the first word of the permutation of [in[0], in[1], 0]
// (a sponge of rate 2 and capacity 1 absorbing two words and squeezing one). 240 constraints.
template Poseidon2Hash2() {
    signal input in[2];
    signal output out;

    component permutation = Poseidon2Permutation();
    permutation.in <== [in[0], in[1], 0];
    out <== permutation.out[0];
}

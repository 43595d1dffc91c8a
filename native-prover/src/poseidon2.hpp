// Poseidon2 over BN254's scalar field, t = 3 (sdk/crypto/poseidon2.ts, the pool contract and the circuit hash the
// same), and the nodes of a LeanIMT over given leaves. Included inside the kernel namespace after field.hpp.
// The round constants come from the caller (the SDK sends its own), so they live in one place.

/** The 80 round constants in order: 4 x 3 external, 56 internal, 4 x 3 external; Montgomery form. */
struct Poseidon2Constants {
  Fr externalInitial[4][3], internal[56], externalFinal[4][3];
};

static FIELD_INLINE Fr pow5(const Fr& x) {
  const Fr x2 = x * x;
  return x2 * x2 * x;
}

static FIELD_INLINE void externalRounds(const Fr (*rounds)[3], Fr& s0, Fr& s1, Fr& s2) {
  for (int r = 0; r < 4; r++) {
    s0 = pow5(s0 + rounds[r][0]);
    s1 = pow5(s1 + rounds[r][1]);
    s2 = pow5(s2 + rounds[r][2]);
    const Fr sum = s0 + s1 + s2;
    s0 = s0 + sum;
    s1 = s1 + sum;
    s2 = s2 + sum;
  }
}

/** The first word of the permutation of [left, right, 0]: a tree node (poseidon2Hash2). */
static Fr poseidon2Compress(const Poseidon2Constants& c, const Fr& left, const Fr& right) {
  const Fr sum = left + right;
  Fr s0 = left + sum, s1 = right + sum, s2 = sum;
  externalRounds(c.externalInitial, s0, s1, s2);
  for (int r = 0; r < 56; r++) {
    s0 = pow5(s0 + c.internal[r]);
    const Fr total = s0 + s1 + s2;
    s0 = s0 + total;
    s1 = s1 + total;
    s2 = s2.dbl() + total;
  }
  externalRounds(c.externalFinal, s0, s1, s2);
  return s0;
}

// Poseidon2 over BN254's scalar field, t = 3 (sdk/crypto/poseidon2.ts, the pool contract and the circuit hash the
// same), and the nodes of a LeanIMT over given leaves. Included inside the kernel namespace after field-asm.hpp.
// The round constants come from the caller (the SDK sends its own), so they live in one place.
//
// One hash is a chain of 240 dependent multiplications, so the tree's nodes are hashed LANES at a time in lockstep
// (the multiplications of one step side by side), which lets the core overlap the chains; the arithmetic is
// field-asm.hpp's, on values kept in memory.

/** The 80 round constants in order: 4 x 3 external, 56 internal, 4 x 3 external; Montgomery form. */
struct Poseidon2Constants {
  Fr externalInitial[4][3], internal[56], externalFinal[4][3];
};

/** The constants from their standard-form words, in the order above. */
static Poseidon2Constants poseidon2Constants(const uint64_t* standardWords) {
  Poseidon2Constants c;
  Fr* flat[80];
  for (int i = 0; i < 12; i++) flat[i] = &c.externalInitial[i / 3][i % 3];
  for (int i = 0; i < 56; i++) flat[12 + i] = &c.internal[i];
  for (int i = 0; i < 12; i++) flat[68 + i] = &c.externalFinal[i / 3][i % 3];
  for (int i = 0; i < 80; i++) *flat[i] = Fr::fromStandard(standardWords + 4 * i);
  return c;
}

namespace poseidon2 {

/** Nodes hashed side by side. Measured at 1, 2, 4 and 8 (native-prover/README.md): 4 as fast as 8, 1 a quarter slower. */
constexpr int LANES = 4;

static FIELD_INLINE void add(Fr& r, const Fr& a, const Fr& b) { addModAsm(r.v, a.v, b.v, FR_MOD); }
static FIELD_INLINE void mul(Fr& r, const Fr& a, const Fr& b) { montMulAsm(r.v, a.v, b.v, FR_MOD); }
static FIELD_INLINE void sqr(Fr& r, const Fr& a) { montSqrAsm(r.v, a.v, FR_MOD); }

/** x[k] = x[k]^5 for each k, each step for all of them before the next. */
template <int N>
static FIELD_INLINE void pow5(Fr* x) {
  Fr x4[N];
  for (int k = 0; k < N; k++) sqr(x4[k], x[k]);
  for (int k = 0; k < N; k++) sqr(x4[k], x4[k]);
  for (int k = 0; k < N; k++) mul(x[k], x4[k], x[k]);
}

/** W states side by side: word i of lane k in s[i][k]. */
template <int W>
struct Lanes {
  Fr s[3][W];
};

template <int W>
static FIELD_INLINE void externalRounds(const Fr (*rounds)[3], Lanes<W>& l) {
  for (int r = 0; r < 4; r++) {
    for (int i = 0; i < 3; i++) {
      for (int k = 0; k < W; k++) add(l.s[i][k], l.s[i][k], rounds[r][i]);
    }
    pow5<3 * W>(&l.s[0][0]);
    for (int k = 0; k < W; k++) {
      Fr sum;
      add(sum, l.s[0][k], l.s[1][k]);
      add(sum, sum, l.s[2][k]);
      for (int i = 0; i < 3; i++) add(l.s[i][k], l.s[i][k], sum);
    }
  }
}

/**
 * W tree nodes (poseidon2Hash2: the first word of the permutation of [left, right, 0]), lane k the parent of
 * children[2k] and children[2k + 1].
 */
template <int W>
static void compress(const Poseidon2Constants& c, const Fr* children, Fr* parents) {
  Lanes<W> l;
  for (int k = 0; k < W; k++) {
    const Fr &left = children[2 * k], &right = children[2 * k + 1];
    add(l.s[2][k], left, right);
    add(l.s[0][k], left, l.s[2][k]);
    add(l.s[1][k], right, l.s[2][k]);
  }
  externalRounds(c.externalInitial, l);
  for (int r = 0; r < 56; r++) {
    for (int k = 0; k < W; k++) add(l.s[0][k], l.s[0][k], c.internal[r]);
    pow5<W>(l.s[0]);
    for (int k = 0; k < W; k++) {  // [s0, s1, s2] times [[2, 1, 1], [1, 2, 1], [1, 1, 3]]
      Fr total;
      add(total, l.s[1][k], l.s[2][k]);
      add(total, total, l.s[0][k]);
      add(l.s[0][k], l.s[0][k], total);
      add(l.s[1][k], l.s[1][k], total);
      add(l.s[2][k], l.s[2][k], l.s[2][k]);
      add(l.s[2][k], l.s[2][k], total);
    }
  }
  externalRounds(c.externalFinal, l);
  for (int k = 0; k < W; k++) parents[k] = l.s[0][k];
}

}  // namespace poseidon2

/** parents[i] = the node over children[2i] and children[2i + 1], for i below `pairs`. */
static void poseidon2Parents(const Poseidon2Constants& c, const Fr* children, size_t pairs, Fr* parents) {
  size_t i = 0;
  for (; i + poseidon2::LANES <= pairs; i += poseidon2::LANES) poseidon2::compress<poseidon2::LANES>(c, children + 2 * i, parents + i);
  for (; i < pairs; i++) poseidon2::compress<1>(c, children + 2 * i, parents + i);
}

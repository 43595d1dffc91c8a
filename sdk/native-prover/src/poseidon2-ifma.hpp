// Poseidon2 for the tree's nodes on AVX-512 IFMA (52-bit multiply-accumulate on eight 64-bit lanes): 8 nodes to a
// vector, GROUPS vectors side by side, about ten times the throughput of one node at a time on 64-bit words. Only
// these functions use AVX-512 (each is compiled for it by its target attribute, the rest of the build is not, so no
// AVX-512 instruction reaches code that other CPUs run); main.cpp calls them on a CPU that has the extensions and
// passes avx512SelfTest (lean-tree.hpp). Included inside the kernel namespace after poseidon2.hpp.
//
// A field element is five 52-bit limbs in Montgomery form with R = 2^260 (the words' R is 2^256: a node is moved
// into the lanes by a multiplication by 2^264 mod p and out by one by 2^256 mod p). Since R > 64p, a product stays
// below a * b / R + p without a final subtraction (below 2p for factors up to 9p), so values are carried unreduced:
// additions add limbs, limbs are normalized (carried into 52 bits) only where a multiplication needs it, and in the
// partial rounds the two words no S-box brings down are taken below p + 2^215 by a Barrett step each round. The
// bounds (p / 2^260 < 0.012): every factor stays below 16p, every value below 64p. The last word is made canonical
// before it leaves.

#define IFMA_TARGET __attribute__((target("avx512f,avx512ifma")))
#define IFMA_INLINE inline __attribute__((always_inline, target("avx512f,avx512ifma")))

namespace ifma {

using V = __m512i;
constexpr u64 MASK52 = (u64(1) << 52) - 1;
constexpr int GROUPS = 3;  // measured at 1 to 4 (native-prover/README.md): 3 was fastest
constexpr size_t LANES = 8 * GROUPS;

/** Eight field elements, one a lane: value = sum of limb i * 2^(52 i), limbs 64-bit signed. */
struct F {
  V l[5];
};

/** The words of a 256-bit number as 52-bit limbs. */
constexpr void split52(u64 out[5], const u64 w[4]) {
  out[0] = w[0] & MASK52;
  out[1] = (w[0] >> 52 | w[1] << 12) & MASK52;
  out[2] = (w[1] >> 40 | w[2] << 24) & MASK52;
  out[3] = (w[2] >> 28 | w[3] << 36) & MASK52;
  out[4] = w[3] >> 16;
}

/** The scalar field as the lanes use it. */
struct Field {
  u64 p[5];
  u64 pInv;  // -p^-1 mod 2^52
  u64 mu;  // floor(2^305 / p), below 2^52: Barrett's estimate of v / p from v's top limb
  u64 intoLanes[5];  // 2^264 mod p
  u64 outOfLanes[5];  // 2^256 mod p
};

constexpr Field makeField() {
  Field f{};
  split52(f.p, FR_MOD.p);
  f.pInv = FR_MOD.inv & MASK52;
  u64 remainder[4] = {0, 0, 0, 0};  // long division of 2^305 by p, one bit at a time
  for (int bit = 305; bit >= 0; bit--) {
    for (int i = 3; i > 0; i--) remainder[i] = remainder[i] << 1 | remainder[i - 1] >> 63;
    remainder[0] = remainder[0] << 1 | (bit == 305);
    f.mu <<= 1;
    if (geq4(remainder, FR_MOD.p)) {
      sub4(remainder, remainder, FR_MOD.p);
      f.mu |= 1;
    }
  }
  u64 power[4] = {FR_MOD.one[0], FR_MOD.one[1], FR_MOD.one[2], FR_MOD.one[3]};
  split52(f.outOfLanes, power);
  for (int i = 0; i < 8; i++) addMod(power, power, power, FR_MOD.p);
  split52(f.intoLanes, power);
  return f;
}

inline constexpr Field FIELD = makeField();
static_assert(FIELD.mu < (u64(1) << 52) && FIELD.mu > (u64(1) << 51), "Barrett's constant must fill 52 bits");

static IFMA_INLINE V broadcast(u64 x) { return _mm512_set1_epi64((long long)x); }

/** Limbs carried into 52 bits each, the sign (if any) in the top one. */
static IFMA_INLINE void normalize(F& a) {
  for (int i = 0; i < 4; i++) {
    a.l[i + 1] = _mm512_add_epi64(a.l[i + 1], _mm512_srai_epi64(a.l[i], 52));
    a.l[i] = _mm512_and_si512(a.l[i], broadcast(MASK52));
  }
}

/** a * b / 2^260 mod p, below a * b / 2^260 + p, normalized; a and b normalized and nonnegative. */
static IFMA_INLINE F mul(const F& a, const F& b) {
  const V zero = _mm512_setzero_si512();
  V t[10];
  for (int i = 0; i < 10; i++) t[i] = zero;
  for (int i = 0; i < 5; i++) {
    for (int j = 0; j < 5; j++) {
      t[i + j] = _mm512_madd52lo_epu64(t[i + j], a.l[j], b.l[i]);
      t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a.l[j], b.l[i]);
    }
  }
  for (int i = 0; i < 5; i++) {  // t += m p 2^(52 i), m clearing limb i, whose carry moves up
    const V m = _mm512_madd52lo_epu64(zero, t[i], broadcast(FIELD.pInv));
    for (int j = 0; j < 5; j++) {
      t[i + j] = _mm512_madd52lo_epu64(t[i + j], m, broadcast(FIELD.p[j]));
      t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], m, broadcast(FIELD.p[j]));
    }
    t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_srli_epi64(t[i], 52));
  }
  F r;
  for (int i = 0; i < 5; i++) r.l[i] = t[5 + i];
  normalize(r);
  return r;
}

static IFMA_INLINE F add(const F& a, const F& b) {
  F r;
  for (int i = 0; i < 5; i++) r.l[i] = _mm512_add_epi64(a.l[i], b.l[i]);
  return r;
}

/** a + a round constant (52-bit limbs, the same in every lane), normalized for a multiplication. */
static IFMA_INLINE F addConstant(const F& a, const u64 c[5]) {
  F r;
  for (int i = 0; i < 5; i++) r.l[i] = _mm512_add_epi64(a.l[i], broadcast(c[i]));
  normalize(r);
  return r;
}

/**
 * v - q p, q = floor(top limb * mu / 2^97) <= v / p: below p + 2^215, normalized. For v below 64p with nonnegative
 * limbs (the top limb is then at most v / 2^208, below 2^52, and q p fits five limbs).
 */
static IFMA_INLINE F reduce(const F& v) {
  const V zero = _mm512_setzero_si512();
  const V q = _mm512_srli_epi64(_mm512_madd52hi_epu64(zero, v.l[4], broadcast(FIELD.mu)), 45);
  F r;
  V carry = zero;  // the high half of q times the limb below
  for (int j = 0; j < 5; j++) {
    r.l[j] = _mm512_sub_epi64(v.l[j], _mm512_madd52lo_epu64(carry, q, broadcast(FIELD.p[j])));
    carry = _mm512_madd52hi_epu64(zero, q, broadcast(FIELD.p[j]));
  }
  normalize(r);
  return r;
}

/** x[k] = x[k]^5 for each k, each step for all of them before the next. */
template <int N>
static IFMA_INLINE void pow5(F* x) {
  F x4[N];
  for (int k = 0; k < N; k++) x4[k] = mul(x[k], x[k]);
  for (int k = 0; k < N; k++) x4[k] = mul(x4[k], x4[k]);
  for (int k = 0; k < N; k++) x[k] = mul(x4[k], x[k]);
}

/** The round constants as 52-bit limbs of their Montgomery form with R = 2^260. */
struct Constants {
  u64 externalInitial[4][3][5], internal[56][5], externalFinal[4][3][5];
};

/** Montgomery(2^256) words times 16 mod p: Montgomery(2^260), as limbs. */
static void intoLanesForm(u64 out[5], const Fr& x) {
  u64 w[4] = {x.v[0], x.v[1], x.v[2], x.v[3]};
  for (int i = 0; i < 4; i++) addMod(w, w, w, FR_MOD.p);
  split52(out, w);
}

static Constants lanesConstants(const Poseidon2Constants& c) {
  Constants lanes;
  for (int r = 0; r < 4; r++) {
    for (int i = 0; i < 3; i++) {
      intoLanesForm(lanes.externalInitial[r][i], c.externalInitial[r][i]);
      intoLanesForm(lanes.externalFinal[r][i], c.externalFinal[r][i]);
    }
  }
  for (int r = 0; r < 56; r++) intoLanesForm(lanes.internal[r], c.internal[r]);
  return lanes;
}

struct State {
  F s[3][GROUPS];
};

/** After them every word is below 6p (from below 16p). */
static IFMA_INLINE void externalRounds(const u64 (*rounds)[3][5], State& st) {
  for (int r = 0; r < 4; r++) {
    for (int i = 0; i < 3; i++) {
      for (int g = 0; g < GROUPS; g++) st.s[i][g] = addConstant(st.s[i][g], rounds[r][i]);
    }
    pow5<3 * GROUPS>(&st.s[0][0]);  // each below 1.5p
    for (int g = 0; g < GROUPS; g++) {
      const F sum = add(add(st.s[0][g], st.s[1][g]), st.s[2][g]);
      for (int i = 0; i < 3; i++) st.s[i][g] = add(st.s[i][g], sum);
    }
  }
}

static IFMA_INLINE void permute(const Constants& c, State& st) {
  externalRounds(c.externalInitial, st);
  for (int r = 0; r < 56; r++) {
    for (int g = 0; g < GROUPS; g++) st.s[0][g] = addConstant(st.s[0][g], c.internal[r]);
    pow5<GROUPS>(st.s[0]);
    for (int g = 0; g < GROUPS; g++) {  // s0 below 14p after, s1 and s2 (below 25p before) below p + 2^215
      const F total = add(add(st.s[0][g], st.s[1][g]), st.s[2][g]);
      st.s[0][g] = add(st.s[0][g], total);
      st.s[1][g] = reduce(add(st.s[1][g], total));
      st.s[2][g] = reduce(add(add(st.s[2][g], st.s[2][g]), total));
    }
  }
  externalRounds(c.externalFinal, st);
}

/** Eight canonical Montgomery(2^256) words, lane k's at words + k * stride, into the lanes' form (below 1.1p). */
static IFMA_INLINE F load(const u64* words, long long stride) {
  const V index = _mm512_set_epi64(7 * stride, 6 * stride, 5 * stride, 4 * stride, 3 * stride, 2 * stride, stride, 0);
  V w[4];
  for (int i = 0; i < 4; i++) w[i] = _mm512_i64gather_epi64(index, (const long long*)(words + i), 8);
  const V mask = broadcast(MASK52);
  F a, k;
  a.l[0] = _mm512_and_si512(w[0], mask);
  a.l[1] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(w[0], 52), _mm512_slli_epi64(w[1], 12)), mask);
  a.l[2] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(w[1], 40), _mm512_slli_epi64(w[2], 24)), mask);
  a.l[3] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(w[2], 28), _mm512_slli_epi64(w[3], 36)), mask);
  a.l[4] = _mm512_srli_epi64(w[3], 16);
  for (int i = 0; i < 5; i++) k.l[i] = broadcast(FIELD.intoLanes[i]);
  return mul(a, k);
}

/** The lanes of v (below 16p, nonnegative limbs) as canonical Montgomery(2^256) words, lane k's at out + k * stride. */
static IFMA_INLINE void store(F v, u64* out, long long stride) {
  normalize(v);
  F k, d;
  for (int i = 0; i < 5; i++) k.l[i] = broadcast(FIELD.outOfLanes[i]);
  F r = mul(v, k);  // below 1.2p
  for (int i = 0; i < 5; i++) d.l[i] = _mm512_sub_epi64(r.l[i], broadcast(FIELD.p[i]));
  normalize(d);
  const __mmask8 belowP = _mm512_cmplt_epi64_mask(d.l[4], _mm512_setzero_si512());
  for (int i = 0; i < 5; i++) r.l[i] = _mm512_mask_blend_epi64(belowP, d.l[i], r.l[i]);
  const V w[4] = {
      _mm512_or_si512(r.l[0], _mm512_slli_epi64(r.l[1], 52)),
      _mm512_or_si512(_mm512_srli_epi64(r.l[1], 12), _mm512_slli_epi64(r.l[2], 40)),
      _mm512_or_si512(_mm512_srli_epi64(r.l[2], 24), _mm512_slli_epi64(r.l[3], 28)),
      _mm512_or_si512(_mm512_srli_epi64(r.l[3], 36), _mm512_slli_epi64(r.l[4], 16)),
  };
  const V index = _mm512_set_epi64(7 * stride, 6 * stride, 5 * stride, 4 * stride, 3 * stride, 2 * stride, stride, 0);
  for (int i = 0; i < 4; i++) _mm512_i64scatter_epi64((long long*)(out + i), index, w[i], 8);
}

/** LANES nodes: parents[k] over children[2k] and children[2k + 1], as poseidon2::compress. */
static IFMA_TARGET void compress(const Constants& c, const Fr* children, Fr* parents) {
  State st;
  for (int g = 0; g < GROUPS; g++) {
    const F left = load(children[16 * g].v, 8), right = load(children[16 * g + 1].v, 8);
    st.s[2][g] = add(left, right);
    st.s[0][g] = add(left, st.s[2][g]);
    st.s[1][g] = add(right, st.s[2][g]);
  }
  permute(c, st);
  for (int g = 0; g < GROUPS; g++) store(st.s[0][g], parents[8 * g].v, 4);
}

}  // namespace ifma

/** As poseidon2Parents, LANES nodes at a time (the last ones over zeros where fewer are left). */
static IFMA_TARGET void poseidon2ParentsIfma(const ifma::Constants& c, const Fr* children, size_t pairs, Fr* parents) {
  size_t i = 0;
  for (; i + ifma::LANES <= pairs; i += ifma::LANES) ifma::compress(c, children + 2 * i, parents + i);
  if (i == pairs) return;
  Fr padded[2 * ifma::LANES] = {}, out[ifma::LANES];
  std::copy(children + 2 * i, children + 2 * pairs, padded);
  ifma::compress(c, padded, out);
  std::copy(out, out + (pairs - i), parents + i);
}

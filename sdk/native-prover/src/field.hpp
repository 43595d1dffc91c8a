// Montgomery arithmetic on four 64-bit limbs (R = 2^256) for BN254's base field Fq and scalar field Fr, and Fq2.
// Included inside the kernel namespace (see kernels.cpp): compiled once portable and once with BMI2/ADX.
#pragma once

using u64 = uint64_t;
using u128 = unsigned __int128;

struct Modulus {
  u64 p[4];
  u64 inv;  // -p^-1 mod 2^64
  u64 one[4];  // R mod p
  u64 r2[4];  // R^2 mod p
};

constexpr bool geq4(const u64 a[4], const u64 b[4]) {
  for (int i = 3; i >= 0; i--) {
    if (a[i] != b[i]) return a[i] > b[i];
  }
  return true;
}

constexpr void sub4(u64 r[4], const u64 a[4], const u64 b[4]) {
  u64 borrow = 0;
  for (int i = 0; i < 4; i++) {
    u128 d = (u128)a[i] - b[i] - borrow;
    r[i] = (u64)d;
    borrow = (u64)(d >> 64) & 1;
  }
}

// a + b mod p for a, b < p < 2^254: the sum never leaves 256 bits.
constexpr void addMod(u64 r[4], const u64 a[4], const u64 b[4], const u64 p[4]) {
  u64 carry = 0;
  for (int i = 0; i < 4; i++) {
    u128 s = (u128)a[i] + b[i] + carry;
    r[i] = (u64)s;
    carry = (u64)(s >> 64);
  }
  if (geq4(r, p)) sub4(r, r, p);
}

constexpr Modulus makeModulus(u64 p0, u64 p1, u64 p2, u64 p3) {
  Modulus m{{p0, p1, p2, p3}, 0, {0, 0, 0, 0}, {0, 0, 0, 0}};
  u64 x = 1;
  for (int i = 0; i < 7; i++) x *= 2 - p0 * x;  // Newton: x = p^-1 mod 2^64
  m.inv = (u64)0 - x;
  u64 v[4] = {1, 0, 0, 0};
  for (int i = 0; i < 256; i++) addMod(v, v, v, m.p);
  for (int i = 0; i < 4; i++) m.one[i] = v[i];
  for (int i = 0; i < 256; i++) addMod(v, v, v, m.p);
  for (int i = 0; i < 4; i++) m.r2[i] = v[i];
  return m;
}

inline constexpr Modulus FQ_MOD = makeModulus(0x3c208c16d87cfd47ULL, 0x97816a916871ca8dULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL);
inline constexpr Modulus FR_MOD = makeModulus(0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL);

#define FIELD_INLINE inline __attribute__((always_inline))

// hi:lo = a * b + c + d (never overflows 128 bits).
static FIELD_INLINE u64 mulAdd(u64& lo, u64 a, u64 b, u64 c, u64 d) {
  const u128 t = (u128)a * b + c + d;
  lo = (u64)t;
  return (u64)(t >> 64);
}

// CIOS Montgomery multiplication, a * b / R mod p, without the top carry words: p's top limb is below 2^63 - 1,
// so the running sum stays within four limbs (the "no-carry" variant).
static FIELD_INLINE void montMul(u64 r[4], const u64 a[4], const u64 b[4], const Modulus& m) {
  u64 t[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; i++) {
    u64 A = mulAdd(t[0], a[0], b[i], t[0], 0);
    const u64 q = t[0] * m.inv;
    u64 lo;
    u64 C = mulAdd(lo, q, m.p[0], t[0], 0);
    for (int j = 1; j < 4; j++) {
      A = mulAdd(t[j], a[j], b[i], t[j], A);
      C = mulAdd(t[j - 1], q, m.p[j], t[j], C);
    }
    t[3] = C + A;
  }
  if (geq4(t, m.p)) sub4(t, t, m.p);
  r[0] = t[0], r[1] = t[1], r[2] = t[2], r[3] = t[3];
}

template <const Modulus& M>
struct Fp {
  u64 v[4];

  static Fp zero() { return Fp{{0, 0, 0, 0}}; }
  static Fp one() { return Fp{{M.one[0], M.one[1], M.one[2], M.one[3]}}; }
  /** From standard-form limbs. */
  static Fp fromStandard(const u64 a[4]) {
    Fp r;
    montMul(r.v, a, M.r2, M);
    return r;
  }
  /** To standard-form limbs. */
  void toStandard(u64 out[4]) const {
    const u64 unit[4] = {1, 0, 0, 0};
    montMul(out, v, unit, M);
  }
  bool isZero() const { return (v[0] | v[1] | v[2] | v[3]) == 0; }
  bool operator==(const Fp& b) const { return v[0] == b.v[0] && v[1] == b.v[1] && v[2] == b.v[2] && v[3] == b.v[3]; }
  FIELD_INLINE Fp operator+(const Fp& b) const {
    Fp r, s;
    unsigned char c = _addcarry_u64(0, v[0], b.v[0], (unsigned long long*)&r.v[0]);
    c = _addcarry_u64(c, v[1], b.v[1], (unsigned long long*)&r.v[1]);
    c = _addcarry_u64(c, v[2], b.v[2], (unsigned long long*)&r.v[2]);
    _addcarry_u64(c, v[3], b.v[3], (unsigned long long*)&r.v[3]);
    unsigned char borrow = _subborrow_u64(0, r.v[0], M.p[0], (unsigned long long*)&s.v[0]);
    borrow = _subborrow_u64(borrow, r.v[1], M.p[1], (unsigned long long*)&s.v[1]);
    borrow = _subborrow_u64(borrow, r.v[2], M.p[2], (unsigned long long*)&s.v[2]);
    borrow = _subborrow_u64(borrow, r.v[3], M.p[3], (unsigned long long*)&s.v[3]);
    return borrow ? r : s;
  }
  FIELD_INLINE Fp operator-(const Fp& b) const {
    Fp r;
    unsigned char borrow = _subborrow_u64(0, v[0], b.v[0], (unsigned long long*)&r.v[0]);
    borrow = _subborrow_u64(borrow, v[1], b.v[1], (unsigned long long*)&r.v[1]);
    borrow = _subborrow_u64(borrow, v[2], b.v[2], (unsigned long long*)&r.v[2]);
    borrow = _subborrow_u64(borrow, v[3], b.v[3], (unsigned long long*)&r.v[3]);
    const u64 mask = (u64)0 - borrow;  // add p back when the difference went negative
    unsigned char c = _addcarry_u64(0, r.v[0], M.p[0] & mask, (unsigned long long*)&r.v[0]);
    c = _addcarry_u64(c, r.v[1], M.p[1] & mask, (unsigned long long*)&r.v[1]);
    c = _addcarry_u64(c, r.v[2], M.p[2] & mask, (unsigned long long*)&r.v[2]);
    _addcarry_u64(c, r.v[3], M.p[3] & mask, (unsigned long long*)&r.v[3]);
    return r;
  }
  FIELD_INLINE Fp operator*(const Fp& b) const {
    Fp r;
    montMul(r.v, v, b.v, M);
    return r;
  }
  Fp sqr() const { return *this * *this; }
  Fp dbl() const { return *this + *this; }
  Fp neg() const { return zero() - *this; }
  /** this^e for a standard-form exponent. */
  Fp pow(const u64 e[4]) const {
    Fp r = one(), b = *this;
    for (int i = 0; i < 256; i++) {
      if ((e[i / 64] >> (i % 64)) & 1) r = r * b;
      b = b.sqr();
    }
    return r;
  }
  /** Fermat: this^(p-2); zero stays zero. */
  Fp inverse() const {
    u64 e[4] = {M.p[0] - 2, M.p[1], M.p[2], M.p[3]};
    return pow(e);
  }
};

using Fq = Fp<FQ_MOD>;
using Fr = Fp<FR_MOD>;

/** Fq[u] / (u^2 + 1). */
struct Fq2 {
  Fq c0, c1;

  static Fq2 zero() { return {Fq::zero(), Fq::zero()}; }
  static Fq2 one() { return {Fq::one(), Fq::zero()}; }
  bool isZero() const { return c0.isZero() && c1.isZero(); }
  bool operator==(const Fq2& b) const { return c0 == b.c0 && c1 == b.c1; }
  Fq2 operator+(const Fq2& b) const { return {c0 + b.c0, c1 + b.c1}; }
  Fq2 operator-(const Fq2& b) const { return {c0 - b.c0, c1 - b.c1}; }
  Fq2 operator*(const Fq2& b) const {
    const Fq aa = c0 * b.c0, bb = c1 * b.c1;
    return {aa - bb, (c0 + c1) * (b.c0 + b.c1) - aa - bb};
  }
  Fq2 sqr() const {
    const Fq ab = c0 * c1;
    return {(c0 + c1) * (c0 - c1), ab.dbl()};
  }
  Fq2 dbl() const { return *this + *this; }
  Fq2 inverse() const {
    const Fq t = (c0.sqr() + c1.sqr()).inverse();
    return {c0 * t, (c1 * t).neg()};
  }
};

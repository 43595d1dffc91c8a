// Radix-2 FFT over Fr, in place, on the roots snarkjs uses (powers of 5^((r-1)/2^28)).
#pragma once

constexpr int FR_TWO_ADICITY = 28;

/** A primitive 2^power-th root of unity: ffjavascript's w[power]. */
inline Fr rootOfUnity(int power) {
  // t = (r - 1) / 2^28
  const u64 t[4] = {0x9b9709143e1f593fULL, 0x181585d2833e8487ULL, 0x131a029b85045b68ULL, 0x30644e72eULL};
  const u64 five[4] = {5, 0, 0, 0};
  Fr w = Fr::fromStandard(five).pow(t);
  for (int k = FR_TWO_ADICITY; k > power; k--) w = w.sqr();
  return w;
}

/** roots[i] = w^i for i < n/2. */
inline std::vector<Fr> powersOf(Fr w, size_t count) {
  std::vector<Fr> powers(count);
  powers[0] = Fr::one();
  for (size_t i = 1; i < count; i++) powers[i] = powers[i - 1] * w;
  return powers;
}

/** Evaluations at w^i from coefficients (or, with the inverse root's powers, n times the coefficients). */
inline void fft(Fr* a, size_t n, const std::vector<Fr>& roots) {
  for (size_t i = 1, j = 0; i < n; i++) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const size_t half = len / 2, step = n / len;
    for (size_t start = 0; start < n; start += len) {
      for (size_t k = 0; k < half; k++) {
        const Fr u = a[start + k];
        const Fr v = a[start + k + half] * roots[k * step];
        a[start + k] = u + v;
        a[start + k + half] = u - v;
      }
    }
  }
}

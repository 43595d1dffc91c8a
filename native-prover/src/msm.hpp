// Pippenger multi-exponentiation over affine bases, windows shared out to threads.
#pragma once

struct Scalar {
  u64 v[4];  // standard form, below 2^254
};

constexpr int SCALAR_BITS = 254;

inline int windowBitsFor(size_t count) {
  int log = 0;
  while ((size_t(1) << (log + 1)) <= count) log++;
  return log < 4 ? 2 : log < 8 ? log - 2 : log < 20 ? log - 3 : 16;
}

inline unsigned digitAt(const Scalar& s, int bit, int width) {
  const int limb = bit / 64, shift = bit % 64;
  u64 d = s.v[limb] >> shift;
  if (shift + width > 64 && limb < 3) d |= s.v[limb + 1] << (64 - shift);
  return (unsigned)(d & ((u64(1) << width) - 1));
}

/**
 * Sum of scalars[i] * bases[i]. Scalars 0 are dropped and scalars 1 added straight in (a circom witness is
 * mostly bits); the rest go through Pippenger's buckets, one window per task, `threads` at a time.
 */
template <class F>
Jacobian<F> msm(const Affine<F>* bases, const Scalar* scalars, size_t count, int threads) {
  std::vector<uint32_t> rest;
  rest.reserve(count);
  Jacobian<F> ones = Jacobian<F>::infinity();
  for (size_t i = 0; i < count; i++) {
    const u64* s = scalars[i].v;
    if ((s[1] | s[2] | s[3]) == 0 && s[0] <= 1) {
      if (s[0] == 1) ones = ones.addAffine(bases[i]);
    } else {
      rest.push_back((uint32_t)i);
    }
  }
  if (rest.empty()) return ones;
  const int width = windowBitsFor(rest.size());
  const int windows = (SCALAR_BITS + width - 1) / width;
  std::vector<Jacobian<F>> windowSums(windows, Jacobian<F>::infinity());
  std::atomic<int> next{0};
  auto work = [&]() {
    std::vector<Jacobian<F>> buckets(size_t(1) << width);
    for (int w = next++; w < windows; w = next++) {
      std::fill(buckets.begin(), buckets.end(), Jacobian<F>::infinity());
      const int bit = w * width;
      const int bits = std::min(width, SCALAR_BITS - bit);
      for (uint32_t i : rest) {
        const unsigned d = digitAt(scalars[i], bit, bits);
        if (d) buckets[d] = buckets[d].addAffine(bases[i]);
      }
      Jacobian<F> running = Jacobian<F>::infinity(), sum = Jacobian<F>::infinity();
      for (size_t d = (size_t(1) << bits) - 1; d >= 1; d--) {
        running = running.add(buckets[d]);
        sum = sum.add(running);
      }
      windowSums[w] = sum;
    }
  };
  runThreads(std::min(threads, windows), work);
  Jacobian<F> result = Jacobian<F>::infinity();
  for (int w = windows - 1; w >= 0; w--) {
    for (int b = 0; b < width && w < windows - 1; b++) result = result.dbl();
    result = result.add(windowSums[w]);
  }
  return result.add(ones);
}

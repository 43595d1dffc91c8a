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

template <class Body>
void parallelFor(int threads, size_t count, const Body& body) {
  std::atomic<size_t> next{0};
  const size_t chunk = std::max<size_t>(64, count / (size_t(threads) * 8) + 1);
  auto work = [&]() {
    for (size_t begin = next.fetch_add(chunk); begin < count; begin = next.fetch_add(chunk)) body(begin, std::min(count, begin + chunk));
  };
  runThreads(threads, work);
}

inline bool scalarLess(const Scalar& a, const Scalar& b) {
  for (int i = 3; i >= 0; i--) {
    if (a.v[i] != b.v[i]) return a.v[i] < b.v[i];
  }
  return false;
}

inline bool scalarEqual(const Scalar& a, const Scalar& b) {
  return a.v[0] == b.v[0] && a.v[1] == b.v[1] && a.v[2] == b.v[2] && a.v[3] == b.v[3];
}

/**
 * How a multi-exponentiation's scalars are taken: 0s dropped, 1s added straight in (no window work), the rest in
 * runs of equal values when `grouped` (a circom witness repeats values: the bases of a run are added first, so
 * Pippenger sees each value once).
 */
struct ScalarPlan {
  std::vector<uint32_t> ones;
  std::vector<uint32_t> order;  // indices of the other scalars, equal ones next to each other
  std::vector<uint32_t> runStarts;  // where each run starts in `order`, plus order.size() at the end
};

inline ScalarPlan planScalars(const Scalar* scalars, size_t count, bool grouped) {
  ScalarPlan plan;
  plan.order.reserve(count);
  for (size_t i = 0; i < count; i++) {
    const u64* s = scalars[i].v;
    if ((s[1] | s[2] | s[3]) == 0 && s[0] <= 1) {
      if (s[0] == 1) plan.ones.push_back((uint32_t)i);
    } else {
      plan.order.push_back((uint32_t)i);
    }
  }
  if (grouped) std::sort(plan.order.begin(), plan.order.end(), [&](uint32_t a, uint32_t b) { return scalarLess(scalars[a], scalars[b]); });
  for (size_t k = 0; k < plan.order.size(); k++) {
    if (!grouped || k == 0 || !scalarEqual(scalars[plan.order[k]], scalars[plan.order[k - 1]])) plan.runStarts.push_back((uint32_t)k);
  }
  plan.runStarts.push_back((uint32_t)plan.order.size());
  return plan;
}

/** Jacobian points to affine with one inversion (Montgomery's trick); infinity becomes (0, 0). */
template <class F>
void toAffineBatch(const Jacobian<F>* points, Affine<F>* out, size_t count) {
  std::vector<F> prefix(count);
  F product = F::one();
  for (size_t i = 0; i < count; i++) {
    prefix[i] = product;
    if (!points[i].isInfinity()) product = product * points[i].z;
  }
  F inverse = product.inverse();
  for (size_t i = count; i-- > 0;) {
    if (points[i].isInfinity()) {
      out[i] = {F::zero(), F::zero()};
      continue;
    }
    const F zi = inverse * prefix[i];
    inverse = inverse * points[i].z;
    const F zi2 = zi.sqr();
    out[i] = {points[i].x * zi2, points[i].y * zi2 * zi};
  }
}

/**
 * One window's buckets, accumulated in affine form: additions wait in a batch whose denominators are inverted
 * together (Montgomery's trick), about 6 multiplications an addition against 11 for a mixed Jacobian one. A base
 * whose bucket already waits in the batch goes to the next batch.
 */
template <class F>
class AffineBuckets {
 public:
  // Up to 512 additions share an inversion; fewer with few buckets, where bases would keep meeting in a batch.
  explicit AffineBuckets(size_t count)
      : batchLimit_(std::max<size_t>(16, std::min<size_t>(512, count / 2))), points_(count), filled_(count), stamp_(count) {}

  void clear() {
    std::fill(filled_.begin(), filled_.end(), 0);
    std::fill(stamp_.begin(), stamp_.end(), 0);
    batch_.clear();
    deferred_.clear();
    round_ = 1;
  }

  void add(size_t bucket, const Affine<F>& p) {
    if (p.isInfinity()) return;
    if (!filled_[bucket]) {
      points_[bucket] = p;
      filled_[bucket] = 1;
      return;
    }
    if (stamp_[bucket] == round_) {
      deferred_.push_back({bucket, p});
      if (deferred_.size() >= batchLimit_) flush();
      return;
    }
    const Affine<F>& q = points_[bucket];
    if (q.x == p.x) {
      // Rare: the same point (double it) or its negative (the bucket empties).
      if (q.y == p.y) {
        points_[bucket] = Jacobian<F>{q.x, q.y, F::one()}.dbl().toAffine();
      } else {
        filled_[bucket] = 0;
      }
      return;
    }
    stamp_[bucket] = round_;
    batch_.push_back({bucket, p});
    if (batch_.size() >= batchLimit_) flush();
  }

  /** Finishes every waiting addition. */
  void finish() {
    while (!batch_.empty() || !deferred_.empty()) flush();
  }

  /** The bucket as a Jacobian point (infinity when empty). */
  bool filled(size_t bucket) const { return filled_[bucket]; }
  const Affine<F>& at(size_t bucket) const { return points_[bucket]; }

 private:
  struct Pending {
    size_t bucket;
    Affine<F> p;
  };

  void flush() {
    const size_t n = batch_.size();
    prefix_.resize(n);
    F product = F::one();
    for (size_t k = 0; k < n; k++) {
      prefix_[k] = product;
      product = product * (batch_[k].p.x - points_[batch_[k].bucket].x);
    }
    F inverse = product.inverse();
    for (size_t k = n; k-- > 0;) {
      Affine<F>& q = points_[batch_[k].bucket];
      const Affine<F>& p = batch_[k].p;
      const F dx = p.x - q.x;
      const F lambda = (p.y - q.y) * (inverse * prefix_[k]);
      inverse = inverse * dx;
      const F x3 = lambda.sqr() - q.x - p.x;
      q.y = lambda * (q.x - x3) - q.y;
      q.x = x3;
    }
    batch_.clear();
    round_++;
    std::vector<Pending> retry;
    retry.swap(deferred_);
    for (const Pending& pending : retry) add(pending.bucket, pending.p);
  }

  size_t batchLimit_;
  std::vector<Affine<F>> points_;
  std::vector<uint8_t> filled_;
  std::vector<uint32_t> stamp_;
  std::vector<Pending> batch_, deferred_;
  std::vector<F> prefix_;
  uint32_t round_ = 1;
};

/** Windows narrower than this keep Jacobian buckets. */
constexpr int MIN_AFFINE_BITS = 8;

/** Pippenger over affine bases: one window per task, `threads` at a time. */
template <class F>
Jacobian<F> pippenger(const Affine<F>* bases, const Scalar* scalars, size_t count, int threads) {
  if (count == 0) return Jacobian<F>::infinity();
  const int width = windowBitsFor(count);
  const int windows = (SCALAR_BITS + width - 1) / width;
  std::vector<Jacobian<F>> windowSums(windows, Jacobian<F>::infinity());
  std::atomic<int> next{0};
  auto work = [&]() {
    AffineBuckets<F> buckets(size_t(1) << width);
    for (int w = next++; w < windows; w = next++) {
      const int bit = w * width;
      const int bits = std::min(width, SCALAR_BITS - bit);
      Jacobian<F> running = Jacobian<F>::infinity(), sum = Jacobian<F>::infinity();
      if (bits >= MIN_AFFINE_BITS) {
        buckets.clear();
        for (size_t i = 0; i < count; i++) {
          const unsigned d = digitAt(scalars[i], bit, bits);
          if (d) buckets.add(d, bases[i]);
        }
        buckets.finish();
        for (size_t d = (size_t(1) << bits) - 1; d >= 1; d--) {
          if (buckets.filled(d)) running = running.addAffine(buckets.at(d));
          sum = sum.add(running);
        }
      } else {
        // A narrow window (the top one): bases would keep meeting in a batch; Jacobian buckets instead.
        std::vector<Jacobian<F>> few(size_t(1) << bits, Jacobian<F>::infinity());
        for (size_t i = 0; i < count; i++) {
          const unsigned d = digitAt(scalars[i], bit, bits);
          if (d) few[d] = few[d].addAffine(bases[i]);
        }
        for (size_t d = few.size() - 1; d >= 1; d--) {
          running = running.add(few[d]);
          sum = sum.add(running);
        }
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
  return result;
}

/** Sum of scalars[i] * bases[i], the scalars taken as `plan` says. */
template <class F>
Jacobian<F> msm(const Affine<F>* bases, const Scalar* scalars, const ScalarPlan& plan, int threads) {
  const size_t runs = plan.runStarts.size() - 1;
  std::vector<Affine<F>> points(runs);
  std::vector<Scalar> values(runs);
  // Runs of more than one base: their sums, made affine together.
  std::vector<Jacobian<F>> sums(runs);
  std::vector<uint32_t> summed;
  for (size_t k = 0; k < runs; k++) {
    const uint32_t first = plan.order[plan.runStarts[k]];
    values[k] = scalars[first];
    if (plan.runStarts[k + 1] - plan.runStarts[k] == 1) {
      points[k] = bases[first];
    } else {
      summed.push_back((uint32_t)k);
    }
  }
  parallelFor(threads, summed.size(), [&](size_t begin, size_t end) {
    for (size_t s = begin; s < end; s++) {
      const size_t k = summed[s];
      Jacobian<F> sum = Jacobian<F>::infinity();
      for (uint32_t at = plan.runStarts[k]; at < plan.runStarts[k + 1]; at++) sum = sum.addAffine(bases[plan.order[at]]);
      sums[s] = sum;
    }
  });
  std::vector<Affine<F>> summedAffine(summed.size());
  toAffineBatch(sums.data(), summedAffine.data(), summed.size());
  for (size_t s = 0; s < summed.size(); s++) points[summed[s]] = summedAffine[s];

  Jacobian<F> ones = Jacobian<F>::infinity();
  for (uint32_t i : plan.ones) ones = ones.addAffine(bases[i]);
  return pippenger(points.data(), values.data(), runs, threads).add(ones);
}

/** With one set of buckets for every window, a top window this narrow keeps Jacobian buckets of its own. */
constexpr int MIN_AFFINE_TOP_BITS = 5;

/**
 * Fixed bases made ready for fixedBaseMsm: for each base P and window j, P * 2^(width * j), affine, in one table
 * (base-major). A window's digit then scales a point of the table itself, so every window shares one set of buckets
 * and the doublings between windows are done once here instead of in every proof.
 */
template <class F>
std::vector<Affine<F>> shiftedBases(const Affine<F>* bases, size_t count, int width, int threads) {
  const int windows = (SCALAR_BITS + width - 1) / width;
  std::vector<Affine<F>> table(count * windows);
  parallelFor(threads, count, [&](size_t begin, size_t end) {
    std::vector<Jacobian<F>> shifted((end - begin) * windows);
    for (size_t i = begin; i < end; i++) {
      Jacobian<F> q = Jacobian<F>::infinity().addAffine(bases[i]);
      for (int w = 0; w < windows; w++) {
        shifted[(i - begin) * windows + w] = q;
        for (int b = 0; b < width && w + 1 < windows; b++) q = q.dbl();
      }
    }
    toAffineBatch(shifted.data(), table.data() + begin * windows, shifted.size());
  });
  return table;
}

/** Sum of scalars[i] * bases[i] from the bases' shiftedBases table: one set of buckets, the scalars split over threads. */
template <class F>
Jacobian<F> fixedBaseMsm(const Affine<F>* table, int width, const Scalar* scalars, size_t count, int threads) {
  const int windows = (SCALAR_BITS + width - 1) / width;
  const int topBits = SCALAR_BITS - (windows - 1) * width;
  const int affineWindows = topBits < MIN_AFFINE_TOP_BITS ? windows - 1 : windows;
  const int parts = std::max(1, std::min<int>(threads, int(count / 1024) + 1));
  std::vector<Jacobian<F>> partSums(parts, Jacobian<F>::infinity());
  std::atomic<int> next{0};
  auto work = [&]() {
    AffineBuckets<F> buckets(size_t(1) << width);
    for (int part = next++; part < parts; part = next++) {
      buckets.clear();
      // A very narrow top window: its few digits would keep meeting in a batch, so they get Jacobian buckets.
      std::vector<Jacobian<F>> few(size_t(1) << topBits, Jacobian<F>::infinity());
      for (size_t i = count * part / parts, end = count * (part + 1) / parts; i < end; i++) {
        const Affine<F>* shifted = table + i * windows;
        for (int w = 0; w < affineWindows; w++) {
          const unsigned d = digitAt(scalars[i], w * width, width);
          if (d) buckets.add(d, shifted[w]);
        }
        if (affineWindows < windows) {
          const unsigned d = digitAt(scalars[i], affineWindows * width, topBits);
          if (d) few[d] = few[d].addAffine(shifted[affineWindows]);
        }
      }
      buckets.finish();
      Jacobian<F> running = Jacobian<F>::infinity(), sum = Jacobian<F>::infinity();
      for (size_t d = (size_t(1) << width) - 1; d >= 1; d--) {
        if (buckets.filled(d)) running = running.addAffine(buckets.at(d));
        if (d < few.size()) running = running.add(few[d]);
        sum = sum.add(running);
      }
      partSums[part] = sum;
    }
  };
  runThreads(std::min(threads, parts), work);
  Jacobian<F> result = Jacobian<F>::infinity();
  for (const Jacobian<F>& sum : partSums) result = result.add(sum);
  return result;
}

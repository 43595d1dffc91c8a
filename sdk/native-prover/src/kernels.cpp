// The arithmetic of a proof: the quotient's FFTs and the five multi-exponentiations, and what a long-lived prover
// prepares once from the key; and the lean-tree command's hashing (lean-tree.hpp). This file is compiled twice
// (see sdk/native-prover/build.mjs): KERNEL_NS=portable with plain x86-64 instructions, and KERNEL_NS=bmi2adx
// with -mbmi2 -madx (the compiler's mulx for the 64x64 products); main.cpp picks one at run time from what the
// CPU reports.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#include <x86intrin.h>

#include "prover.hpp"

#ifndef KERNEL_NS
#error "KERNEL_NS must name the kernel variant"
#endif

namespace KERNEL_NS {

template <class Work>
void runThreads(int threads, Work& work) {
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; i++) pool.emplace_back([&work]() { work(); });
  work();
  for (auto& thread : pool) thread.join();
}

#include "field.hpp"
#include "field-asm.hpp"
#include "curve.hpp"
#include "msm.hpp"
#include "fft.hpp"
#include "poseidon2.hpp"
#include "poseidon2-ifma.hpp"
#include "lean-tree.hpp"

namespace {

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

/**
 * The H scalars, as snarkjs' groth16 prover makes them: the QAP evaluations A, B of the witness on the domain,
 * C = A.B, each moved to the odd coset (inverse FFT, times shift^i, FFT), then A.B - C, standard form.
 */
std::vector<Scalar> quotient(const ProvingKey& key, const Scalar* witness, int threads) {
  const size_t n = key.domainSize;
  std::vector<Fr> polys[3] = {std::vector<Fr>(n, Fr::zero()), std::vector<Fr>(n, Fr::zero()), std::vector<Fr>(n)};
  for (const Coefficient& coef : key.coefficients) {
    Fr product;
    montMul(product.v, coef.value, witness[coef.signal].v, FR_MOD);  // value * R * w * R / R: Montgomery form
    Fr& target = polys[coef.matrix][coef.constraint];
    target = target + product;
  }
  for (size_t i = 0; i < n; i++) polys[2][i] = polys[0][i] * polys[1][i];

  const Fr w = rootOfUnity(key.domainPower);
  const std::vector<Fr> roots = powersOf(w, n / 2), inverseRoots = powersOf(w.inverse(), n / 2);
  const Fr shift = rootOfUnity(key.domainPower + 1);
  u64 nStandard[4] = {n, 0, 0, 0};
  const Fr nInverse = Fr::fromStandard(nStandard).inverse();
  std::vector<Fr> shiftPowers = powersOf(shift, n);
  for (Fr& power : shiftPowers) power = power * nInverse;  // the inverse FFT's 1/n, folded in
  std::atomic<int> next{0};
  auto work = [&]() {
    for (int p = next++; p < 3; p = next++) {
      Fr* a = polys[p].data();
      fft(a, n, inverseRoots);
      for (size_t i = 0; i < n; i++) a[i] = a[i] * shiftPowers[i];
      fft(a, n, roots);
    }
  };
  runThreads(std::min(threads, 3), work);
  std::vector<Scalar> h(n);
  for (size_t i = 0; i < n; i++) (polys[0][i] * polys[1][i] - polys[2][i]).toStandard(h[i].v);
  return h;
}

template <class F>
const Affine<F>* basesOf(const View<uint64_t>& points) {
  return reinterpret_cast<const Affine<F>*>(points.data);
}

G1Affine g1At(const uint64_t* words) {
  G1Affine p;
  std::memcpy(&p, words, sizeof p);
  return p;
}

G2Affine g2At(const uint64_t* words) {
  G2Affine p;
  std::memcpy(&p, words, sizeof p);
  return p;
}

G1 fromAffine(const G1Affine& p) { return G1::infinity().addAffine(p); }
G2 fromAffine(const G2Affine& p) { return G2::infinity().addAffine(p); }

}  // namespace

void prove(const ProvingKey& key, const uint64_t* witnessWords, const Blinding& blinding, int threads, ProofPoints& out,
           ProofTimings& timings) {
  const Scalar* witness = reinterpret_cast<const Scalar*>(witnessWords);
  auto started = std::chrono::steady_clock::now();
  const std::vector<Scalar> h = quotient(key, witness, threads);
  timings.quotientMs = msSince(started);

  started = std::chrono::steady_clock::now();
  const size_t privateStart = key.nPublic + 1;
  // A, B1 and B2 share the witness' plan; C takes the private part of it; H's scalars are all distinct.
  const ScalarPlan witnessPlan = planScalars(witness, key.nVars, true);
  const ScalarPlan privatePlan = planScalars(witness + privateStart, key.nVars - privateStart, true);
  const ScalarPlan quotientPlan = planScalars(h.data(), key.domainSize, false);
  const G1 sumA = msm(basesOf<Fq>(key.pointsA), witness, witnessPlan, threads);
  const G1 sumB1 = msm(basesOf<Fq>(key.pointsB1), witness, witnessPlan, threads);
  const G2 sumB2 = msm(basesOf<Fq2>(key.pointsB2), witness, witnessPlan, threads);
  const G1 sumC = msm(basesOf<Fq>(key.pointsC), witness + privateStart, privatePlan, threads);
  const G1 sumH = key.hTable.empty() ? msm(basesOf<Fq>(key.pointsH), h.data(), quotientPlan, threads)
                                     : fixedBaseMsm(basesOf<Fq>(key.hTable), key.hTableBits, h.data(), key.domainSize, threads);
  timings.msmMs = msSince(started);

  const G1 delta1 = fromAffine(g1At(key.delta1));
  const G2 delta2 = fromAffine(g2At(key.delta2));
  const G1 piA = sumA.addAffine(g1At(key.alpha1)).add(delta1.times(blinding.r));
  const G2 piB = sumB2.addAffine(g2At(key.beta2)).add(delta2.times(blinding.s));
  const G1 b1 = sumB1.addAffine(g1At(key.beta1)).add(delta1.times(blinding.s));
  u64 minusRs[4];
  (Fr::fromStandard(blinding.r) * Fr::fromStandard(blinding.s)).neg().toStandard(minusRs);
  const G1 piC = sumC.add(sumH).add(piA.times(blinding.s)).add(b1.times(blinding.r)).add(delta1.times(minusRs));

  const G1Affine a = piA.toAffine(), c = piC.toAffine();
  const G2Affine b = piB.toAffine();
  a.x.toStandard(out.a[0]);
  a.y.toStandard(out.a[1]);
  b.x.c0.toStandard(out.b[0]);
  b.x.c1.toStandard(out.b[1]);
  b.y.c0.toStandard(out.b[2]);
  b.y.c1.toStandard(out.b[3]);
  c.x.toStandard(out.c[0]);
  c.y.toStandard(out.c[1]);
}

/**
 * H's window width once its bases are shifted: 20 windows share 8,192 buckets. Measured at 12 to 15 bits on the
 * withdraw key (32,768 bases): 13 was fastest, and the table takes 42 MB.
 */
constexpr int H_TABLE_BITS = 13;

void prepare(ProvingKey& key, int threads) {
  const View<G1Affine> table = key.hold(shiftedBases(basesOf<Fq>(key.pointsH), key.domainSize, H_TABLE_BITS, threads));
  key.hTable = {reinterpret_cast<const uint64_t*>(table.data), table.size * sizeof(G1Affine) / sizeof(uint64_t)};
  key.hTableBits = H_TABLE_BITS;
}

/** Known answers for this variant's arithmetic: a wrong instruction path must not prove. */
bool selfTest() {
  const u64 two[4] = {2, 0, 0, 0}, three[4] = {3, 0, 0, 0};
  u64 six[4];
  (Fq::fromStandard(two) * Fq::fromStandard(three)).toStandard(six);
  if (six[0] != 6 || (six[1] | six[2] | six[3])) return false;
  // G1's generator (1, 2): 2G computed two ways, and r*G at infinity.
  const u64 one[4] = {1, 0, 0, 0};
  const G1Affine g{Fq::fromStandard(one), Fq::fromStandard(two)};
  const G1 twice = fromAffine(g).dbl(), sum = fromAffine(g).addAffine(g);
  const G1Affine x = twice.toAffine(), y = sum.toAffine();
  if (!(x.x == y.x && x.y == y.y)) return false;
  return fromAffine(g).times(FR_MOD.p).isInfinity() && rootOfUnity(1) == Fr::one().neg();
}

}  // namespace KERNEL_NS

// The proving key and witness as the kernels take them, and the kernels' entry points (one set per CPU path).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

struct Coefficient {
  uint32_t matrix, constraint, signal, unused;
  uint64_t value[4];  // Fr, as the zkey stores it: Montgomery form times R
};

/** `size` values of T held by a key's storage: read, not owned. */
template <class T>
struct View {
  const T* data = nullptr;
  size_t size = 0;
  const T* begin() const { return data; }
  const T* end() const { return data + size; }
  bool empty() const { return size == 0; }
};

/** A Groth16 key from a snarkjs .zkey, coordinates in Montgomery form (R = 2^256), 8-byte aligned. */
struct ProvingKey {
  uint32_t nVars = 0, nPublic = 0, domainSize = 0, domainPower = 0;
  uint64_t alpha1[8], beta1[8], beta2[16], delta1[8], delta2[16];
  View<Coefficient> coefficients;
  /** Empty in a key read back from the key cache: H's bases are then in hTable only. */
  View<uint64_t> pointsA, pointsB1, pointsB2, pointsC, pointsH;
  /** pointsH shifted for every window of hTableBits (shiftedBases in msm.hpp): empty until prepare() made it. */
  View<uint64_t> hTable;
  int hTableBits = 0;
  /** What the views point into (vectors read from the zkey, the prepared table, a mapped key cache file). */
  std::vector<std::shared_ptr<const void>> storage;

  /** A view of `values`, which the key holds from now on. */
  template <class T>
  View<T> hold(std::vector<T> values) {
    auto held = std::make_shared<const std::vector<T>>(std::move(values));
    storage.push_back(held);
    return {held->data(), held->size()};
  }
};

/** Affine coordinates in standard form: a and c (x, y), b (x.c0, x.c1, y.c0, y.c1). */
struct ProofPoints {
  uint64_t a[2][4], b[4][4], c[2][4];
};

struct ProofTimings {
  double quotientMs = 0, msmMs = 0;
};

/** The blinding scalars r and s, standard form, below the group order. */
struct Blinding {
  uint64_t r[4], s[4];
};

#define DECLARE_KERNELS(ns)                                                                                        \
  namespace ns {                                                                                                   \
  void prove(const ProvingKey& key, const uint64_t* witness, const Blinding& blinding, int threads, ProofPoints& out, \
             ProofTimings& timings);                                                                               \
  bool selfTest();                                                                                                 \
  void prepare(ProvingKey& key, int threads);                                                                      \
  void leanTreeNodes(const uint64_t* constants, const uint64_t* leaves, size_t count, int threads,                 \
                     std::vector<uint64_t>& nodes);                                                                \
  /* The same on AVX-512 IFMA: only where the CPU has AVX512F and AVX512IFMA and avx512SelfTest passes. */        \
  void leanTreeNodesAvx512(const uint64_t* constants, const uint64_t* leaves, size_t count, int threads,           \
                           std::vector<uint64_t>& nodes);                                                          \
  bool avx512SelfTest();                                                                                           \
  }
DECLARE_KERNELS(portable)
DECLARE_KERNELS(bmi2adx)

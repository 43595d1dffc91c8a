// groth16-prover: a Groth16 prover for BN254 that reads snarkjs' .zkey and .wtns and writes snarkjs' proof JSON.
//
//   groth16-prover <circuit.zkey> <witness.wtns> <proof.json> <public.json>   (rapidsnark's command line)
//   groth16-prover serve <circuit.zkey> [<cache folder>]
//                                         (loads the key once; stdin: u32 little-endian length + .wtns bytes,
//                                          stdout: one JSON line per witness; length 0 or end of input stops it;
//                                          the key as it proves with it, H's table prepared, is mapped from, or
//                                          written to, the cache folder)
//   groth16-prover cpu                    (prints the kernel variants this CPU gets: the prover's, lean-tree's)
//   groth16-prover lean-tree              (stdin: u32 little-endian leaf count, Poseidon2's 80 round constants, the
//                                          leaves; stdout: the nodes of every level above the leaves, bottom up;
//                                          every number 32 bytes big-endian: a LeanIMT built in one call)
//
// GROTH16_PROVER_CPU=portable forces the portable kernels, =bmi2adx the BMI2/ADX ones without AVX-512 (where the CPU has
// them); GROTH16_PROVER_THREADS caps the threads (default: all cores).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>

#include "key-files.hpp"
#include "prover.hpp"
#include "key-cache.hpp"

namespace {

using ProveFn = void (*)(const ProvingKey&, const uint64_t*, const Blinding&, int, ProofPoints&, ProofTimings&);
using PrepareFn = void (*)(ProvingKey&, int);
using TreeFn = void (*)(const uint64_t*, const uint64_t*, size_t, int, std::vector<uint64_t>&);

struct Kernels {
  const char* name;
  ProveFn prove;
  PrepareFn prepare;
  const char* treeName;  // the lean-tree hashing: name's, or avx512ifma
  TreeFn leanTreeNodes;
};

Kernels chooseKernels() {
  const char* forcedName = std::getenv("GROTH16_PROVER_CPU");
  const std::string forced = forcedName ? forcedName : "";
  __builtin_cpu_init();
  const bool avx512 = forced.empty() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
  if (forced != "portable" && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("adx") && bmi2adx::selfTest()) {
    if (avx512 && bmi2adx::avx512SelfTest()) return {"bmi2adx", bmi2adx::prove, bmi2adx::prepare, "avx512ifma", bmi2adx::leanTreeNodesAvx512};
    return {"bmi2adx", bmi2adx::prove, bmi2adx::prepare, "bmi2adx", bmi2adx::leanTreeNodes};
  }
  if (!portable::selfTest()) throw std::runtime_error("the portable kernels fail their self-test");
  return {"portable", portable::prove, portable::prepare, "portable", portable::leanTreeNodes};
}

int threadCount() {
  const char* cap = std::getenv("GROTH16_PROVER_THREADS");
  const int cores = (int)std::max(1u, std::thread::hardware_concurrency());
  return cap ? std::max(1, std::min(cores, std::atoi(cap))) : cores;
}

/** A 256-bit little-endian number in decimal. */
std::string decimal(const uint64_t limbs[4]) {
  uint64_t v[4] = {limbs[0], limbs[1], limbs[2], limbs[3]};
  std::string digits;
  while (v[0] | v[1] | v[2] | v[3]) {
    unsigned __int128 rem = 0;
    for (int i = 3; i >= 0; i--) {
      const unsigned __int128 cur = (rem << 64) | v[i];
      v[i] = (uint64_t)(cur / 10);
      rem = cur % 10;
    }
    digits.push_back(char('0' + (int)rem));
  }
  if (digits.empty()) digits = "0";
  return std::string(digits.rbegin(), digits.rend());
}

std::string quoted(const uint64_t limbs[4]) { return "\"" + decimal(limbs) + "\""; }

/** r and s, uniform below the group order (rejection sampling on 254 bits). */
Blinding freshBlinding() {
  static std::random_device device;
  const uint64_t order[4] = {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL};
  auto draw = [&](uint64_t out[4]) {
    for (;;) {
      for (int i = 0; i < 4; i++) out[i] = (uint64_t(device()) << 32) | device();
      out[3] &= (uint64_t(1) << 62) - 1;
      bool below = false;
      for (int i = 3; i >= 0; i--) {
        if (out[i] != order[i]) {
          below = out[i] < order[i];
          break;
        }
      }
      if (below && (out[0] | out[1] | out[2] | out[3])) return;
    }
  };
  Blinding b;
  draw(b.r);
  draw(b.s);
  return b;
}

std::string proofJson(const ProofPoints& p) {
  return "{\"pi_a\":[" + quoted(p.a[0]) + "," + quoted(p.a[1]) + ",\"1\"],\"pi_b\":[[" + quoted(p.b[0]) + "," + quoted(p.b[1]) + "],[" +
         quoted(p.b[2]) + "," + quoted(p.b[3]) + "],[\"1\",\"0\"]],\"pi_c\":[" + quoted(p.c[0]) + "," + quoted(p.c[1]) +
         ",\"1\"],\"protocol\":\"groth16\",\"curve\":\"bn128\"}";
}

std::string publicJson(const ProvingKey& key, const std::vector<uint64_t>& witness) {
  std::string out = "[";
  for (uint32_t i = 1; i <= key.nPublic; i++) out += (i > 1 ? "," : "") + quoted(&witness[i * 4]);
  return out + "]";
}

struct Proven {
  std::string proof, publicSignals;
  ProofTimings timings;
};

Proven proveWtns(const Kernels& kernels, const ProvingKey& key, const uint8_t* wtns, size_t size, int threads) {
  const std::vector<uint64_t> witness = parseWtns(wtns, size, key);
  ProofPoints points;
  Proven proven;
  kernels.prove(key, witness.data(), freshBlinding(), threads, points, proven.timings);
  proven.proof = proofJson(points);
  proven.publicSignals = publicJson(key, witness);
  return proven;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c == '\n' ? ' ' : c);
  }
  return out;
}

bool readExactly(uint8_t* into, size_t bytes) { return std::fread(into, 1, bytes, stdin) == bytes; }

int serve(const Kernels& kernels, const std::string& zkeyPath, const std::string& cacheFolder, int threads) {
  const auto starting = std::chrono::steady_clock::now();
  auto preparing = starting;
  ProvingKey key;
  bool cached = false;
  {
    const MappedFile zkey = mapFile(zkeyPath);
    const Digest digest = digestOf(zkey.data.get(), zkey.size);
    preparing = std::chrono::steady_clock::now();
    cached = !cacheFolder.empty() && loadKey(cacheFolder, digest, key);
    if (!cached) {
      key = parseZkey(zkey.data.get(), zkey.size);
      // Done once for every proof to come (a one-shot prove would pay more for it than it saves), or read back.
      kernels.prepare(key, threads);
      if (!cacheFolder.empty()) saveKey(cacheFolder, digest, key);  // a folder it cannot write only costs the next start
    }
  }
  const auto ready = std::chrono::steady_clock::now();
  const double prepareMs = std::chrono::duration<double, std::milli>(ready - preparing).count();
  const double startMs = std::chrono::duration<double, std::milli>(ready - starting).count();
  std::printf("{\"ready\":true,\"cpu\":\"%s\",\"threads\":%d,\"nVars\":%u,\"nPublic\":%u,\"domainSize\":%u,\"prepareMs\":%.0f,\"tableCached\":%s,\"startMs\":%.0f}\n",
              kernels.name, threads, key.nVars, key.nPublic, key.domainSize, prepareMs, cached ? "true" : "false", startMs);
  std::fflush(stdout);
  std::vector<uint8_t> wtns;
  for (;;) {
    uint8_t header[4];
    if (!readExactly(header, 4)) return 0;
    const uint32_t length = uint32_t(header[0]) | uint32_t(header[1]) << 8 | uint32_t(header[2]) << 16 | uint32_t(header[3]) << 24;
    if (length == 0) return 0;
    wtns.resize(length);
    if (!readExactly(wtns.data(), length)) return 0;
    std::string line;
    try {
      const Proven p = proveWtns(kernels, key, wtns.data(), wtns.size(), threads);
      char timings[96];
      std::snprintf(timings, sizeof timings, "{\"quotientMs\":%.2f,\"msmMs\":%.2f}", p.timings.quotientMs, p.timings.msmMs);
      line = "{\"proof\":" + p.proof + ",\"publicSignals\":" + p.publicSignals + ",\"timings\":" + timings + "}";
    } catch (const std::exception& error) {
      line = std::string("{\"error\":\"") + escaped(error.what()) + "\"}";
    }
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
}

/** `count` numbers of 32 big-endian bytes read from stdin, as little-endian limbs. */
std::vector<uint64_t> readBigEndianWords(size_t count) {
  std::vector<uint8_t> bytes(32 * count);
  if (!readExactly(bytes.data(), bytes.size())) throw std::runtime_error("lean-tree: the input ends early");
  std::vector<uint64_t> words(4 * count);
  for (size_t i = 0; i < count; i++) {
    for (int limb = 0; limb < 4; limb++) {
      uint64_t word = 0;
      for (int b = 0; b < 8; b++) word = word << 8 | bytes[32 * i + 8 * (3 - limb) + b];
      words[4 * i + limb] = word;
    }
  }
  return words;
}

int leanTree(const Kernels& kernels, int threads) {
  uint8_t header[4];
  if (!readExactly(header, 4)) throw std::runtime_error("lean-tree: no leaf count");
  const uint32_t count = uint32_t(header[0]) | uint32_t(header[1]) << 8 | uint32_t(header[2]) << 16 | uint32_t(header[3]) << 24;
  const std::vector<uint64_t> constants = readBigEndianWords(80), leaves = readBigEndianWords(count);
  std::vector<uint64_t> nodes;
  kernels.leanTreeNodes(constants.data(), leaves.data(), count, threads, nodes);
  std::vector<uint8_t> out(8 * nodes.size());
  for (size_t i = 0; i < nodes.size() / 4; i++) {
    for (int limb = 0; limb < 4; limb++) {
      for (int b = 0; b < 8; b++) out[32 * i + 8 * (3 - limb) + b] = uint8_t(nodes[4 * i + limb] >> (56 - 8 * b));
    }
  }
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) throw std::runtime_error("lean-tree: cannot write the nodes");
  std::fflush(stdout);
  return 0;
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw FileError("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Kernels kernels = chooseKernels();
    const int threads = threadCount();
    if (argc == 2 && std::string(argv[1]) == "cpu") {
      std::printf("%s %s\n", kernels.name, kernels.treeName);
      return 0;
    }
    if (argc == 2 && std::string(argv[1]) == "lean-tree") return leanTree(kernels, threads);
    if ((argc == 3 || argc == 4) && std::string(argv[1]) == "serve") return serve(kernels, argv[2], argc == 4 ? argv[3] : "", threads);
    if (argc != 5) {
      std::fprintf(stderr, "usage: %s <circuit.zkey> <witness.wtns> <proof.json> <public.json> | serve <circuit.zkey> [<cache folder>] | lean-tree | cpu\n", argv[0]);
      return 2;
    }
    const MappedFile zkey = mapFile(argv[1]);
    const ProvingKey key = parseZkey(zkey.data.get(), zkey.size);
    const std::vector<uint8_t> wtns = readWholeFile(argv[2]);
    const Proven p = proveWtns(kernels, key, wtns.data(), wtns.size(), threads);
    writeFile(argv[3], p.proof);
    writeFile(argv[4], p.publicSignals);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "groth16-prover: %s\n", error.what());
    return 1;
  }
}

// A LeanIMT's nodes over given leaves (the `lean-tree` command): level by level, each level's pairs shared out to
// the threads in runs. Included inside the kernel namespace after poseidon2-ifma.hpp.

/** Pairs a thread hashes at a time: a multiple of either Poseidon2's lanes (poseidon2::LANES, ifma::LANES). */
constexpr size_t LEAN_TREE_RUN = 384;
static_assert(LEAN_TREE_RUN % poseidon2::LANES == 0 && LEAN_TREE_RUN % ifma::LANES == 0, "runs of whole lanes");

/** The nodes of every level above the leaves, bottom up, standard form; hashRun(children, pairs, parents) hashes. */
template <class HashRun>
void leanTreeLevels(const uint64_t* leafWords, size_t leaves, int threads, const HashRun& hashRun, std::vector<uint64_t>& nodeWords) {
  std::vector<Fr> level(leaves);
  for (size_t i = 0; i < leaves; i++) level[i] = Fr::fromStandard(leafWords + 4 * i);
  nodeWords.clear();
  while (level.size() > 1) {
    std::vector<Fr> parents((level.size() + 1) / 2);
    const size_t pairs = level.size() / 2;
    std::atomic<size_t> next{0};
    auto work = [&]() {
      for (size_t start; (start = next.fetch_add(LEAN_TREE_RUN)) < pairs;) {
        hashRun(&level[2 * start], std::min(pairs - start, LEAN_TREE_RUN), &parents[start]);
      }
    };
    runThreads(pairs >= 2 * LEAN_TREE_RUN ? threads : 1, work);
    if (level.size() % 2 == 1) parents.back() = level.back();  // a node without a sibling moves up unchanged
    const size_t at = nodeWords.size();
    nodeWords.resize(at + 4 * parents.size());
    for (size_t i = 0; i < parents.size(); i++) parents[i].toStandard(&nodeWords[at + 4 * i]);
    level.swap(parents);
  }
}

void leanTreeNodes(const uint64_t* constantWords, const uint64_t* leafWords, size_t leaves, int threads, std::vector<uint64_t>& nodeWords) {
  const Poseidon2Constants constants = poseidon2Constants(constantWords);
  const auto hashRun = [&](const Fr* children, size_t pairs, Fr* parents) { poseidon2Parents(constants, children, pairs, parents); };
  leanTreeLevels(leafWords, leaves, threads, hashRun, nodeWords);
}

void leanTreeNodesAvx512(const uint64_t* constantWords, const uint64_t* leafWords, size_t leaves, int threads, std::vector<uint64_t>& nodeWords) {
  const ifma::Constants constants = ifma::lanesConstants(poseidon2Constants(constantWords));
  const auto hashRun = [&](const Fr* children, size_t pairs, Fr* parents) { poseidon2ParentsIfma(constants, children, pairs, parents); };
  leanTreeLevels(leafWords, leaves, threads, hashRun, nodeWords);
}

/**
 * Whether the AVX-512 lanes hash as the 64-bit words do (a CPU or system that mishandles them must not build trees):
 * a run of LANES + 5 nodes over values from 0 to p - 1, with made-up round constants.
 */
bool avx512SelfTest() {
  const u64 pMinusOne[4] = {FR_MOD.p[0] - 1, FR_MOD.p[1], FR_MOD.p[2], FR_MOD.p[3]};
  Fr x = Fr::fromStandard(pMinusOne);
  const auto next = [&x]() { return x = x * x + Fr::one(); };
  u64 constantWords[80 * 4];
  for (int i = 0; i < 80; i++) next().toStandard(constantWords + 4 * i);
  const Poseidon2Constants constants = poseidon2Constants(constantWords);
  constexpr size_t PAIRS = ifma::LANES + 5;
  std::vector<Fr> children(2 * PAIRS), words(PAIRS), lanes(PAIRS);
  for (Fr& child : children) child = next();
  children[0] = Fr::zero();
  children[3] = Fr::fromStandard(pMinusOne);
  poseidon2Parents(constants, children.data(), PAIRS, words.data());
  poseidon2ParentsIfma(ifma::lanesConstants(constants), children.data(), PAIRS, lanes.data());
  return words == lanes;
}

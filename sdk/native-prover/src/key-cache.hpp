// The key as `serve` proves with it, kept on disk: the zkey's coefficients and points laid out as the kernels read
// them, and H's shifted bases that serve prepares (about 1.3 s on two cores). A restart maps the file and points
// the key into it, instead of reading and parsing the zkey and computing the table again. A cache file is named
// and checked by a digest of the whole zkey it was made from (the zkey is mapped, not read, to take it) and
// carries a digest of its own content: a file of another key, a truncated or altered one is ignored and made
// again. The digest is not cryptographic: whoever can write the cache folder (next to the binary by default)
// could replace the binary itself.
#pragma once
#include <cstdint>
#include <string>

#include "prover.hpp"

/** A 128-bit digest of bytes. */
struct Digest {
  uint64_t a = 0, b = 0;
  bool operator==(const Digest& other) const { return a == other.a && b == other.b; }
  std::string hex() const;
};

Digest digestOf(const uint8_t* data, size_t size);

/** The prepared key of the zkey with digest `zkey` from `folder`, mapped; false when there is none fit to use. */
bool loadKey(const std::string& folder, const Digest& zkey, ProvingKey& key);

/** Writes `key`, prepared, for the zkey with digest `zkey` into `folder` (whole or not at all); false when it could not. */
bool saveKey(const std::string& folder, const Digest& zkey, const ProvingKey& key);

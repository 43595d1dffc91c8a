// The prepared H table of `serve` kept on disk, so that a restart reads it back instead of computing it again
// (about 1.3 s on two cores against tens of milliseconds). A cache file is named and checked by a digest of the
// whole zkey it was made from, and carries a digest of its own table: a file of another key, a truncated or
// altered one is ignored and made again. The digest is not cryptographic: whoever can write the cache folder (next
// to the binary by default) could replace the binary itself.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "prover.hpp"

/** A 128-bit digest of bytes. */
struct Digest {
  uint64_t a = 0, b = 0;
  bool operator==(const Digest& other) const { return a == other.a && b == other.b; }
  std::string hex() const;
};

Digest digestOf(const uint8_t* data, size_t size);

/** Reads the table of the zkey with digest `zkey` from `folder` into key.hTable; false when there is none fit to use. */
bool loadTable(const std::string& folder, const Digest& zkey, ProvingKey& key);

/** Writes key.hTable for the zkey with digest `zkey` into `folder` (whole or not at all); false when it could not. */
bool saveTable(const std::string& folder, const Digest& zkey, const ProvingKey& key);

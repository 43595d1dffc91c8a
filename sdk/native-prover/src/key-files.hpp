// Readers of snarkjs' binary files: the Groth16 .zkey and the .wtns witness. Every size is checked; a truncated,
// foreign or mismatched file throws FileError with a message that says which and why.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "prover.hpp"

struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<uint8_t> readWholeFile(const std::string& path);

/** A file's bytes, mapped read-only with its pages loaded; unmapped when the last copy of `data` goes. */
struct MappedFile {
  std::shared_ptr<const uint8_t> data;
  size_t size = 0;
};
/** Maps `path`; throws FileError when it cannot be read. */
MappedFile mapFile(const std::string& path);

/** The key in a .zkey's bytes, its coefficients and points copied into vectors the key holds. */
ProvingKey parseZkey(const uint8_t* bytes, size_t size);
/** The witness values (standard form, 4 limbs each), checked against the key's field and signal count. */
std::vector<uint64_t> parseWtns(const uint8_t* bytes, size_t size, const ProvingKey& key);

#include "key-cache.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "key-files.hpp"

namespace {

const char MAGIC[8] = {'G', '1', '6', 'K', 'E', 'Y', '0', '1'};
/** Each array of the file starts at a multiple of this (a cache line), as a vector's data would. */
constexpr size_t ALIGN = 64;

struct Header {
  char magic[8];
  /** Of every byte after it: the rest of the header and the arrays. */
  Digest content;
  Digest zkey;
  uint32_t nVars, nPublic, domainSize, domainPower;
  uint64_t alpha1[8], beta1[8], beta2[16], delta1[8], delta2[16];
  uint64_t hTableBits;
  /** How many coefficients, then how many 64-bit words in each array of points. */
  uint64_t coefficients, pointsA, pointsB1, pointsB2, pointsC, hTable;
};

/** Where the bytes the content digest covers start. */
constexpr size_t DIGESTED = offsetof(Header, content) + sizeof(Digest);

constexpr size_t aligned(size_t offset) { return (offset + ALIGN - 1) / ALIGN * ALIGN; }

/** Where each array of a file with `header`'s counts starts (coefficients, A, B1, B2, C, the H table), and where it ends. */
struct Layout {
  size_t offsets[6];
  size_t end;
};

Layout layoutOf(const Header& header) {
  const uint64_t bytes[6] = {header.coefficients * sizeof(Coefficient), header.pointsA * 8, header.pointsB1 * 8,
                             header.pointsB2 * 8, header.pointsC * 8, header.hTable * 8};
  Layout layout;
  size_t at = aligned(sizeof(Header));
  for (int i = 0; i < 6; i++) {
    layout.offsets[i] = at;
    at = aligned(at + bytes[i]);
  }
  layout.end = at;
  return layout;
}

/** Whether `header` describes a key the kernels can prove with, before its arrays are looked at. */
bool consistent(const Header& h, size_t fileSize) {
  if (h.domainPower > 27 || (uint64_t(1) << h.domainPower) != h.domainSize || h.nPublic + 1 > h.nVars) return false;
  if (h.hTableBits == 0 || h.hTableBits > 24 || h.hTable == 0 || h.hTable % (8 * uint64_t(h.domainSize)) != 0) return false;
  if (h.pointsA != 8 * uint64_t(h.nVars) || h.pointsB1 != h.pointsA || h.pointsB2 != 2 * h.pointsA) return false;
  if (h.pointsC != 8 * uint64_t(h.nVars - h.nPublic - 1)) return false;
  // Counts no larger than the file, so that the layout cannot overflow.
  return h.coefficients <= fileSize && h.hTable <= fileSize && layoutOf(h).end == fileSize;
}

std::string cachePath(const std::string& folder, const Digest& zkey) { return folder + "/prepared-key-" + zkey.hex() + ".bin"; }

inline uint64_t mix(uint64_t h, uint64_t word, uint64_t multiplier) {
  h ^= word * multiplier;
  h = (h << 31) | (h >> 33);
  return h * 0x9e3779b97f4a7c15ULL;
}

}  // namespace

std::string Digest::hex() const {
  char out[33];
  std::snprintf(out, sizeof out, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
  return out;
}

Digest digestOf(const uint8_t* data, size_t size) {
  // Four independent lanes (the loop runs at memory speed), folded into two words with the length.
  uint64_t lanes[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
  const uint64_t multipliers[4] = {0xff51afd7ed558ccdULL, 0xc4ceb9fe1a85ec53ULL, 0x87c37b91114253d5ULL, 0x4cf5ad432745937fULL};
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int lane = 0; lane < 4; lane++) {
      uint64_t word;
      std::memcpy(&word, data + i + 8 * lane, 8);
      lanes[lane] = mix(lanes[lane], word, multipliers[lane]);
    }
  }
  for (int lane = 0; i < size; i++, lane = (lane + 1) % 4) lanes[lane] = mix(lanes[lane], data[i], multipliers[lane]);
  Digest d;
  d.a = mix(mix(lanes[0], lanes[1], multipliers[2]), size, multipliers[0]);
  d.b = mix(mix(lanes[2], lanes[3], multipliers[3]), d.a, multipliers[1]);
  return d;
}

bool loadKey(const std::string& folder, const Digest& zkey, ProvingKey& key) {
  MappedFile file;
  try {
    file = mapFile(cachePath(folder, zkey));
  } catch (const FileError&) {
    return false;
  }
  Header header;
  if (file.size < sizeof header) return false;
  const uint8_t* bytes = file.data.get();
  std::memcpy(&header, bytes, sizeof header);
  if (std::memcmp(header.magic, MAGIC, sizeof MAGIC) != 0 || !(header.zkey == zkey) || !consistent(header, file.size)) return false;
  if (!(digestOf(bytes + DIGESTED, file.size - DIGESTED) == header.content)) return false;

  const Layout layout = layoutOf(header);
  const auto words = [&](int part, uint64_t count) { return View<uint64_t>{reinterpret_cast<const uint64_t*>(bytes + layout.offsets[part]), count}; };
  key.nVars = header.nVars;
  key.nPublic = header.nPublic;
  key.domainSize = header.domainSize;
  key.domainPower = header.domainPower;
  std::memcpy(key.alpha1, header.alpha1, sizeof key.alpha1);
  std::memcpy(key.beta1, header.beta1, sizeof key.beta1);
  std::memcpy(key.beta2, header.beta2, sizeof key.beta2);
  std::memcpy(key.delta1, header.delta1, sizeof key.delta1);
  std::memcpy(key.delta2, header.delta2, sizeof key.delta2);
  key.coefficients = {reinterpret_cast<const Coefficient*>(bytes + layout.offsets[0]), header.coefficients};
  key.pointsA = words(1, header.pointsA);
  key.pointsB1 = words(2, header.pointsB1);
  key.pointsB2 = words(3, header.pointsB2);
  key.pointsC = words(4, header.pointsC);
  key.pointsH = {};
  key.hTable = words(5, header.hTable);
  key.hTableBits = int(header.hTableBits);
  key.storage.push_back(file.data);
  return true;
}

bool saveKey(const std::string& folder, const Digest& zkey, const ProvingKey& key) {
  Header header{};
  std::memcpy(header.magic, MAGIC, sizeof MAGIC);
  header.zkey = zkey;
  header.nVars = key.nVars;
  header.nPublic = key.nPublic;
  header.domainSize = key.domainSize;
  header.domainPower = key.domainPower;
  std::memcpy(header.alpha1, key.alpha1, sizeof key.alpha1);
  std::memcpy(header.beta1, key.beta1, sizeof key.beta1);
  std::memcpy(header.beta2, key.beta2, sizeof key.beta2);
  std::memcpy(header.delta1, key.delta1, sizeof key.delta1);
  std::memcpy(header.delta2, key.delta2, sizeof key.delta2);
  header.hTableBits = uint64_t(key.hTableBits);
  header.coefficients = key.coefficients.size;
  header.pointsA = key.pointsA.size;
  header.pointsB1 = key.pointsB1.size;
  header.pointsB2 = key.pointsB2.size;
  header.pointsC = key.pointsC.size;
  header.hTable = key.hTable.size;

  const Layout layout = layoutOf(header);
  std::vector<uint8_t> file(layout.end, 0);
  const std::pair<const void*, size_t> parts[6] = {
      {key.coefficients.data, key.coefficients.size * sizeof(Coefficient)},
      {key.pointsA.data, key.pointsA.size * 8},
      {key.pointsB1.data, key.pointsB1.size * 8},
      {key.pointsB2.data, key.pointsB2.size * 8},
      {key.pointsC.data, key.pointsC.size * 8},
      {key.hTable.data, key.hTable.size * 8},
  };
  for (int i = 0; i < 6; i++) {
    if (parts[i].second > 0) std::memcpy(file.data() + layout.offsets[i], parts[i].first, parts[i].second);
  }
  std::memcpy(file.data(), &header, sizeof header);
  header.content = digestOf(file.data() + DIGESTED, file.size() - DIGESTED);
  std::memcpy(file.data(), &header, sizeof header);

  // A name of its own: two provers starting at once each write whole files, and the last rename wins.
  const std::string path = cachePath(folder, zkey), partial = path + "." + std::to_string(getpid()) + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    out.write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));
    if (!out) {
      std::remove(partial.c_str());
      return false;
    }
  }
  return std::rename(partial.c_str(), path.c_str()) == 0;
}

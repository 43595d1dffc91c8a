#include "table-cache.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>

namespace {

const char MAGIC[8] = {'G', '1', '6', 'H', 'T', 'A', 'B', '1'};

struct Header {
  char magic[8];
  Digest zkey;
  uint64_t bits, words, domainSize;
  Digest table;
};

inline uint64_t mix(uint64_t h, uint64_t word, uint64_t multiplier) {
  h ^= word * multiplier;
  h = (h << 31) | (h >> 33);
  return h * 0x9e3779b97f4a7c15ULL;
}

std::string cachePath(const std::string& folder, const Digest& zkey) { return folder + "/h-table-" + zkey.hex() + ".bin"; }

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

bool loadTable(const std::string& folder, const Digest& zkey, ProvingKey& key) {
  std::ifstream in(cachePath(folder, zkey), std::ios::binary);
  Header header;
  if (!in.read(reinterpret_cast<char*>(&header), sizeof header)) return false;
  if (std::memcmp(header.magic, MAGIC, sizeof MAGIC) != 0 || !(header.zkey == zkey) || header.domainSize != key.domainSize) return false;
  if (header.bits == 0 || header.bits > 24 || header.words > (uint64_t(1) << 34)) return false;
  std::vector<uint64_t> table(header.words);
  if (!in.read(reinterpret_cast<char*>(table.data()), std::streamsize(table.size() * 8))) return false;
  if (!(digestOf(reinterpret_cast<const uint8_t*>(table.data()), table.size() * 8) == header.table)) return false;
  key.hTable = std::move(table);
  key.hTableBits = int(header.bits);
  return true;
}

bool saveTable(const std::string& folder, const Digest& zkey, const ProvingKey& key) {
  Header header;
  std::memcpy(header.magic, MAGIC, sizeof MAGIC);
  header.zkey = zkey;
  header.bits = uint64_t(key.hTableBits);
  header.words = key.hTable.size();
  header.domainSize = key.domainSize;
  header.table = digestOf(reinterpret_cast<const uint8_t*>(key.hTable.data()), key.hTable.size() * 8);
  const std::string path = cachePath(folder, zkey), partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&header), sizeof header);
    out.write(reinterpret_cast<const char*>(key.hTable.data()), std::streamsize(key.hTable.size() * 8));
    if (!out) {
      std::remove(partial.c_str());
      return false;
    }
  }
  return std::rename(partial.c_str(), path.c_str()) == 0;
}

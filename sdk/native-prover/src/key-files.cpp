#include "key-files.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>

namespace {

// BN254's base field q and scalar field r, little-endian.
const uint64_t Q[4] = {0x3c208c16d87cfd47ULL, 0x97816a916871ca8dULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL};
const uint64_t R[4] = {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL};

struct Section {
  const uint8_t* data;
  uint64_t size;
};

class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size, std::string what) : data_(data), size_(size), what_(std::move(what)) {}
  const uint8_t* take(uint64_t bytes) {
    if (bytes > size_ - at_) throw FileError(what_ + " is truncated");
    at_ += bytes;
    return data_ + at_ - bytes;
  }
  uint32_t u32() {
    uint32_t v;
    std::memcpy(&v, take(4), 4);
    return v;
  }
  uint64_t u64() {
    uint64_t v;
    std::memcpy(&v, take(8), 8);
    return v;
  }
  bool done() const { return at_ == size_; }

 private:
  const uint8_t* data_;
  uint64_t size_, at_ = 0;
  std::string what_;
};

std::map<uint32_t, Section> readSections(const uint8_t* data, size_t size, const std::string& magic, const std::string& what) {
  if (size < 12 || std::memcmp(data, magic.data(), 4) != 0) throw FileError(what + " is not a ." + magic + " file (wrong magic)");
  Reader reader(data, size, what);
  reader.take(8);  // magic, version
  const uint32_t count = reader.u32();
  std::map<uint32_t, Section> sections;
  for (uint32_t i = 0; i < count; i++) {
    const uint32_t id = reader.u32();
    const uint64_t bytes = reader.u64();
    sections[id] = {reader.take(bytes), bytes};
  }
  return sections;
}

Section sectionOf(const std::map<uint32_t, Section>& sections, uint32_t id, const std::string& what) {
  auto found = sections.find(id);
  if (found == sections.end()) throw FileError(what + " has no section " + std::to_string(id) + " (truncated or not a Groth16 key)");
  return found->second;
}

void expectPrime(Reader& reader, const uint64_t prime[4], const std::string& what) {
  if (reader.u32() != 32 || std::memcmp(reader.take(32), prime, 32) != 0) throw FileError(what + " is not over BN254 (bn128)");
}

View<uint64_t> pointsOf(ProvingKey& key, const std::map<uint32_t, Section>& sections, uint32_t id, uint64_t count, uint64_t pointBytes) {
  const Section s = sectionOf(sections, id, "the zkey");
  if (s.size != count * pointBytes) throw FileError("the zkey's section " + std::to_string(id) + " has the wrong size (truncated or foreign key)");
  std::vector<uint64_t> words(s.size / 8);
  std::memcpy(words.data(), s.data, s.size);
  return key.hold(std::move(words));
}

}  // namespace

std::vector<uint8_t> readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("cannot read " + path);
  in.seekg(0, std::ios::end);
  std::vector<uint8_t> bytes((size_t)in.tellg());
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), (std::streamsize)bytes.size())) throw FileError("cannot read " + path);
  return bytes;
}

MappedFile mapFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  struct stat info;
  if (fd < 0 || fstat(fd, &info) != 0) {
    if (fd >= 0) close(fd);
    throw FileError("cannot read " + path);
  }
  MappedFile file;
  file.size = size_t(info.st_size);
  int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
  flags |= MAP_POPULATE;  // every page mapped now, in one call, rather than one fault at a time
#endif
  void* bytes = file.size == 0 ? nullptr : mmap(nullptr, file.size, PROT_READ, flags, fd, 0);
  close(fd);
  if (bytes == MAP_FAILED) throw FileError("cannot read " + path);
  const size_t size = file.size;
  file.data = std::shared_ptr<const uint8_t>(static_cast<const uint8_t*>(bytes), [size](const uint8_t* mapped) {
    if (mapped != nullptr) munmap(const_cast<uint8_t*>(mapped), size);
  });
  return file;
}

ProvingKey parseZkey(const uint8_t* bytes, size_t size) {
  const auto sections = readSections(bytes, size, "zkey", "the zkey");
  const Section protocol = sectionOf(sections, 1, "the zkey");
  Reader protocolReader(protocol.data, protocol.size, "the zkey's protocol section");
  if (protocolReader.u32() != 1) throw FileError("the zkey is not a Groth16 key");

  const Section header = sectionOf(sections, 2, "the zkey");
  Reader reader(header.data, header.size, "the zkey's header");
  expectPrime(reader, Q, "the zkey");
  expectPrime(reader, R, "the zkey");
  ProvingKey key;
  key.nVars = reader.u32();
  key.nPublic = reader.u32();
  key.domainSize = reader.u32();
  while ((uint64_t(1) << key.domainPower) < key.domainSize) key.domainPower++;
  if ((uint64_t(1) << key.domainPower) != key.domainSize || key.domainPower > 27 || key.nPublic + 1 > key.nVars) {
    throw FileError("the zkey's header is inconsistent (domain size or signal counts)");
  }
  std::memcpy(key.alpha1, reader.take(64), 64);
  std::memcpy(key.beta1, reader.take(64), 64);
  std::memcpy(key.beta2, reader.take(128), 128);
  reader.take(128);  // gamma2: only the verifier needs it
  std::memcpy(key.delta1, reader.take(64), 64);
  std::memcpy(key.delta2, reader.take(128), 128);

  const Section coefficients = sectionOf(sections, 4, "the zkey");
  Reader coefficientReader(coefficients.data, coefficients.size, "the zkey's coefficients");
  const uint32_t count = coefficientReader.u32();
  std::vector<Coefficient> parsed(count);
  for (Coefficient& c : parsed) {
    c.matrix = coefficientReader.u32();
    c.constraint = coefficientReader.u32();
    c.signal = coefficientReader.u32();
    std::memcpy(c.value, coefficientReader.take(32), 32);
    if (c.matrix > 1 || c.constraint >= key.domainSize || c.signal >= key.nVars) throw FileError("the zkey's coefficients are corrupt");
  }
  if (!coefficientReader.done()) throw FileError("the zkey's coefficients section has the wrong size");
  key.coefficients = key.hold(std::move(parsed));

  key.pointsA = pointsOf(key, sections, 5, key.nVars, 64);
  key.pointsB1 = pointsOf(key, sections, 6, key.nVars, 64);
  key.pointsB2 = pointsOf(key, sections, 7, key.nVars, 128);
  key.pointsC = pointsOf(key, sections, 8, key.nVars - key.nPublic - 1, 64);
  key.pointsH = pointsOf(key, sections, 9, key.domainSize, 64);
  return key;
}

std::vector<uint64_t> parseWtns(const uint8_t* bytes, size_t size, const ProvingKey& key) {
  const auto sections = readSections(bytes, size, "wtns", "the witness");
  const Section header = sectionOf(sections, 1, "the witness");
  Reader reader(header.data, header.size, "the witness header");
  expectPrime(reader, R, "the witness");
  const uint32_t count = reader.u32();
  if (count != key.nVars) throw FileError("the witness has " + std::to_string(count) + " signals, the key expects " + std::to_string(key.nVars));
  const Section values = sectionOf(sections, 2, "the witness");
  if (values.size != uint64_t(count) * 32) throw FileError("the witness values section has the wrong size");
  std::vector<uint64_t> words(count * 4);
  std::memcpy(words.data(), values.data, values.size);
  for (uint32_t i = 0; i < count; i++) {
    const uint64_t* v = &words[i * 4];
    bool below = false;
    for (int limb = 3; limb >= 0; limb--) {
      if (v[limb] != R[limb]) {
        below = v[limb] < R[limb];
        break;
      }
    }
    if (!below) throw FileError("the witness holds a value outside the scalar field");
  }
  return words;
}

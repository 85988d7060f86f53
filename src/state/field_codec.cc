#include "state/field_codec.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "base/check.h"

namespace stoker {

namespace {

constexpr size_t kHeader = 20;
constexpr size_t kTrailer = 8;

}  // namespace

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

void FieldWriter::U(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void FieldWriter::D(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  Fixed(bits, 8);
}

void FieldWriter::Str(std::string_view s) {
  U(s.size());
  out_.append(s);
}

void FieldWriter::Fixed(uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t FieldReader::U() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    Need(1);
    const auto byte = static_cast<uint8_t>(in_[pos_++]);
    if (shift == 63 && byte > 1) Fail("a number runs past 64 bits");
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return v;
  }
  Fail("a number runs past 64 bits");
}

double FieldReader::D() {
  const uint64_t bits = Fixed(8);
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}

std::string FieldReader::Str() {
  const uint64_t n = U();
  Need(n);
  std::string s(in_.substr(pos_, n));
  pos_ += n;
  return s;
}

uint64_t FieldReader::Fixed(int bytes) {
  Need(bytes);
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[pos_++])) << (8 * i);
  }
  return v;
}

uint64_t FieldReader::Count(uint64_t min_bytes) {
  const uint64_t n = U();
  if (n > left() / std::max<uint64_t>(1, min_bytes)) Fail("a count exceeds the file");
  return n;
}

void FieldReader::Fail(const std::string& what) const {
  throw DataError(fmt::format("{}: not a valid {}: {}", source_, kind_, what));
}

void FieldReader::Need(uint64_t n) const {
  if (n > left()) Fail("it ends early");
}

std::string FrameFile(std::string_view magic, uint32_t version, std::string payload) {
  STOKER_ASSERT(magic.size() == 8, "a magic of {} bytes", magic.size());
  FieldWriter header;
  header.bytes().append(magic);
  header.Fixed(version, 4);
  header.Fixed(payload.size(), 8);
  std::string file = std::move(payload);  // framed where it lies: a 20 MB record is not copied
  file.reserve(header.bytes().size() + file.size() + 8);
  file.insert(0, header.bytes());
  FieldWriter checksum;
  checksum.Fixed(XXH3_64bits(file.data(), file.size()), 8);
  file += checksum.bytes();
  return file;
}

FieldReader UnframeFile(std::string_view bytes, std::string_view magic, uint32_t oldest,
                        uint32_t newest, const std::string& source, const std::string& kind,
                        uint32_t* version) {
  FieldReader frame(bytes, source, kind);
  if (bytes.size() < kHeader + kTrailer || bytes.substr(0, 8) != magic) {
    frame.Fail(fmt::format("no {} header ({} bytes)", kind, bytes.size()));
  }
  frame.Fixed(8);
  const uint64_t found = frame.Fixed(4);
  if (found < oldest || found > newest) {
    frame.Fail(
        oldest == newest
            ? fmt::format("format version {} (this stoker reads {})", found, newest)
            : fmt::format("format version {} (this stoker reads {} to {})", found, oldest, newest));
  }
  *version = static_cast<uint32_t>(found);
  const uint64_t length = frame.Fixed(8);
  if (length != bytes.size() - kHeader - kTrailer) {
    frame.Fail(fmt::format("it holds {} bytes where its header promises {} (truncated?)",
                           bytes.size(), length + kHeader + kTrailer));
  }
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i) {
    stored |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[bytes.size() - 8 + i])) << (8 * i);
  }
  if (stored != XXH3_64bits(bytes.data(), bytes.size() - kTrailer)) {
    frame.Fail("checksum mismatch (the file is corrupt)");
  }
  return FieldReader(bytes.substr(kHeader, length), source, kind);
}

}  // namespace stoker

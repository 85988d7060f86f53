// The byte-level encoding of stoker's own binary files (docs/checkpoint.md): the loader rank
// files (checkpoint_codec.h) and the corpus record (corpus_record.h).
//
// A file is a frame around a payload:
//   bytes 0..7    an 8-byte ASCII magic naming the kind of file ("STOKERCK", "STOKERCT")
//   bytes 8..11   format version, uint32 little-endian
//   bytes 12..19  payload length P, uint64 little-endian
//   bytes 20..    the payload
//   last 8 bytes  XXH3-64 (seed 0) of every byte before them, little-endian
// A payload is a sequence of fields: unsigned LEB128 varints (u), zigzag-coded signed values (s),
// length-prefixed strings (str), little-endian doubles (f64).
//
// Pure: no I/O. Reading never trusts a count it has not checked against the bytes left; any
// problem is a DataError "SOURCE: not a valid KIND: WHAT". Not thread safe (plain values).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace stoker {

uint64_t ZigZag(int64_t v);
int64_t UnZigZag(uint64_t v);

class FieldWriter {
 public:
  void U(uint64_t v);
  void S(int64_t v) { U(ZigZag(v)); }
  void D(double v);
  void Str(std::string_view s);
  void Fixed(uint64_t v, int bytes);
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class FieldReader {
 public:
  // `kind` names the file's kind in errors ("stoker checkpoint"), `source` the file.
  FieldReader(std::string_view bytes, std::string source, std::string kind)
      : in_(bytes), source_(std::move(source)), kind_(std::move(kind)) {}
  uint64_t U();
  int64_t S() { return UnZigZag(U()); }
  double D();
  std::string Str();
  uint64_t Fixed(int bytes);
  // A count of items of at least `min_bytes` each: never more than the bytes left allow.
  uint64_t Count(uint64_t min_bytes);
  bool done() const { return pos_ == in_.size(); }
  uint64_t left() const { return in_.size() - pos_; }
  [[noreturn]] void Fail(const std::string& what) const;

 private:
  void Need(uint64_t n) const;
  std::string_view in_;
  std::string source_;
  std::string kind_;
  size_t pos_ = 0;
};

// The whole file: `magic` (8 characters), `version`, `payload`, checksum; made in `payload`'s
// own buffer.
std::string FrameFile(std::string_view magic, uint32_t version, std::string payload);

// A reader of the payload of `bytes`, after checking the magic, the version (one outside
// [oldest, newest] is refused, naming it; `*version` receives it), the length against the size
// (a truncated file says so) and the checksum.
FieldReader UnframeFile(std::string_view bytes, std::string_view magic, uint32_t oldest,
                        uint32_t newest, const std::string& source, const std::string& kind,
                        uint32_t* version);
// The same for a kind of file of one version.
inline FieldReader UnframeFile(std::string_view bytes, std::string_view magic, uint32_t version,
                               const std::string& source, const std::string& kind) {
  uint32_t found = 0;
  return UnframeFile(bytes, magic, version, version, source, kind, &found);
}

}  // namespace stoker

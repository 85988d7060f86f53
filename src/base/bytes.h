// ByteWriter / ByteReader: a minimal, explicit binary encoding for values that cross ranks
// (broadcasts and all-gathers of tables): fixed-width integers in the host's native byte order,
// and length-prefixed strings. Not a file format: both ends are the same build of stoker on
// hosts of the same byte order (stoker supports little-endian hosts only, docs/format.md).
//
// Plain values, not thread safe; no MPI, no I/O.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/check.h"

namespace stoker {

class ByteWriter {
 public:
  template <typename T>
  requires std::is_arithmetic_v<T>
  void Put(T value) {
    const auto* p = reinterpret_cast<const char*>(&value);
    bytes_.append(p, sizeof(T));
  }
  void PutString(std::string_view s) {
    Put<uint64_t>(s.size());
    PutBytes(s);
  }
  // The bytes alone, without their count.
  void PutBytes(std::string_view s) { bytes_.append(s); }
  // A count, then the elements as they lie in memory.
  template <typename T>
  requires std::is_arithmetic_v<T>
  void PutArray(const std::vector<T>& values) {
    Put<uint64_t>(values.size());
    if (values.empty()) return;
    bytes_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  void Reserve(size_t bytes) { bytes_.reserve(bytes); }
  const std::string& bytes() const { return bytes_; }
  std::string Take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  template <typename T>
  requires std::is_arithmetic_v<T> T Get() {
    STOKER_ASSERT(pos_ + sizeof(T) <= bytes_.size(), "byte stream ends early");
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string GetString() {
    const auto n = Get<uint64_t>();
    STOKER_ASSERT(n <= bytes_.size() - pos_, "byte stream ends early");
    std::string s(bytes_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  template <typename T>
  requires std::is_arithmetic_v<T> std::vector<T> GetArray() {
    const auto n = Get<uint64_t>();
    STOKER_ASSERT(n <= (bytes_.size() - pos_) / sizeof(T), "byte stream ends early");
    std::vector<T> values(n);
    if (n > 0) std::memcpy(values.data(), bytes_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return values;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace stoker

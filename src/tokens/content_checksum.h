// The checksum of a shard's content (docs/format.md, attribute `checksum`): XXH3-64 (seed 0) of
// its document offsets as uint64, then of its tokens as integers of the shard's token size, both
// little-endian, whatever byte order and layout the file stores them in. It is what a shard's
// identity rests on: the corpus fingerprint covers it, so that two copies of a corpus with the
// same names and sizes but other tokens are told apart (a node's stale copy, a shard rewritten).
// stoker's writers record it; `stoker verify` recomputes it, and `stoker verify --record` adds it
// to shards written without one.
//
// Stored as the string attribute "xxh3-64:" followed by 16 lowercase hex digits. Not thread safe
// (one hash per thread); stoker supports little-endian hosts only, so a shard's own bytes are
// hashed as they lie in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "stoker/token_type.h"

namespace stoker {

inline constexpr char kChecksumAttribute[] = "checksum";

class ContentChecksum {
 public:
  ContentChecksum();
  ~ContentChecksum();
  ContentChecksum(const ContentChecksum&) = delete;
  ContentChecksum& operator=(const ContentChecksum&) = delete;

  // Every offset, first, in order.
  void AddOffsets(std::span<const uint64_t> offsets);
  // Then the tokens in order: as the shard's own little-endian bytes, or widened to int64 (as
  // readers widen them) with the shard's token type, which narrows them back.
  void AddTokenBytes(std::span<const std::byte> bytes);
  void AddTokens(std::span<const int64_t> ids, TokenType type);
  uint64_t Value() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// "xxh3-64:00c0ffee00c0ffee".
std::string ChecksumText(uint64_t checksum);
// The value of a `checksum` attribute, or nullopt when `text` is not of that form.
std::optional<uint64_t> ParseChecksum(std::string_view text);

}  // namespace stoker

// ShardWriter: writes one shard of the format in docs/format.md.
//
// The document offsets are given up front (they fix the size of /tokens, which is contiguous);
// tokens are then appended in order, in as many pieces as the caller likes, and narrowed to the
// shard's token type here (an id that does not fit, or is above 2^63 - 1, is a DataError). The
// file is written under a temporary name (PATH.tmp), flushed to disk, renamed into place by
// Finish() and its folder flushed, so a reader never sees half a shard, even after a crash. Files
// are deterministic: the same calls write the same bytes. Finish() records the content checksum
// (tokens/content_checksum.h), hashed as the offsets and tokens are written.
//
// Not thread safe: one thread per writer. HDF5 calls go through the h5 layer, which serializes
// them with every other HDF5 call of the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "h5/h5.h"
#include "stoker/corpus.h"
#include "tokens/content_checksum.h"

namespace stoker {

struct ShardAttributes {
  std::optional<int64_t> vocab_size;
  std::optional<int64_t> eos_id;
  std::optional<int64_t> bos_id;
  std::optional<std::string> tokenizer;
  std::optional<std::string> source;  // where an import took the tokens from (JSON)
};

class ShardWriter {
 public:
  // `doc_offsets` holds n_docs + 1 entries, starts at 0 and never decreases.
  ShardWriter(std::string path, TokenType type, std::span<const uint64_t> doc_offsets,
              const ShardAttributes& attributes);
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;
  ~ShardWriter();

  void Append(std::span<const uint64_t> tokens);
  // Tokens already in the shard's type (native byte order) and known to be valid ids: an import
  // checks them as it reads (import/import_input.h) and writes them as they are.
  void AppendRaw(std::span<const std::byte> raw);
  // Checks that every token arrived, closes the file and moves it into place.
  void Finish();

  uint64_t written() const { return written_; }
  uint64_t total() const { return total_; }

 private:
  std::string path_;
  std::string temp_path_;
  TokenType type_;
  std::optional<h5::File> file_;
  ContentChecksum checksum_;
  uint64_t total_ = 0;
  uint64_t written_ = 0;
};

// Writes a whole shard from memory: the common case for tests and for `stoker pack`.
void WriteShard(const std::string& path, TokenType type, std::span<const uint64_t> doc_offsets,
                std::span<const uint64_t> tokens, const ShardAttributes& attributes);

}  // namespace stoker

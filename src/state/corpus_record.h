// The corpus record: the corpus table as a checkpoint keeps it (docs/checkpoint.md, "The corpus
// record"), so that a resume on a corpus that changed since the save can say which files were
// added, removed or changed rather than only that the fingerprints differ. It holds, per shard,
// what the corpus fingerprint covers (docs/format.md): the relative path, which names the
// dataset, the file size, the document and token counts, the token type and the content checksum.
//
//   magic "STOKERCT", format version 2, then the payload (state/field_codec.h):
//   fingerprint str, shard count u, then per shard: the length of the prefix its path shares
//   with the previous shard's (u), the rest of the path (str), bytes u, documents u, tokens u,
//   token type u (2 x its size in bytes, + 1 when signed), then 0 (u) for a shard without a
//   content checksum, or 1 and the checksum (u). Version 1, without the checksum, is still read.
//
// Paths share most of their bytes with their neighbour's, so a shard takes about 20 bytes (for
// shards of 1 GiB): 2 MB for a corpus of 100,000 shards. Pure: no I/O. Decoding checks the frame
// and every count; any problem is a DataError naming `source`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/token_type.h"

namespace stoker {

inline constexpr uint32_t kCorpusRecordFormatVersion = 2;

struct RecordedShard {
  std::string path;  // relative to the corpus root, e.g. "web/2024/part-00003.h5"
  uint64_t file_bytes = 0;
  uint64_t docs = 0;
  uint64_t tokens = 0;
  TokenType token_type = TokenType::kUint32;
  std::optional<uint64_t> checksum;  // none: a shard without one, or a version-1 record
  bool operator==(const RecordedShard&) const = default;
};

struct CorpusRecord {
  std::string fingerprint;            // the corpus fingerprint of the table recorded
  std::vector<RecordedShard> shards;  // in the corpus table's order
  bool operator==(const CorpusRecord&) const = default;
};

std::string EncodeCorpusRecord(const CorpusRecord& record);

// One shard's fields as a record keeps them, seen where they are held (a corpus table's row).
struct RecordedShardView {
  std::string_view path;
  uint64_t file_bytes = 0;
  uint64_t docs = 0;
  uint64_t tokens = 0;
  TokenType token_type = TokenType::kUint32;
  std::optional<uint64_t> checksum;
};
// The record of `shards` shards, the i-th `shard_at(i)`, encoded with no copy of them made: what a
// loader of a million shards writes (20 MB) without holding a CorpusRecord beside its table.
std::string EncodeCorpusRecord(std::string_view fingerprint, uint64_t shards,
                               const std::function<RecordedShardView(uint64_t)>& shard_at);

// Throws DataError naming `source` (a file name) when the bytes are not a valid corpus record.
CorpusRecord DecodeCorpusRecord(std::string_view bytes, const std::string& source);

}  // namespace stoker

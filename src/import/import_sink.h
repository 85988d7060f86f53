// ImportSink: where one rank of `stoker import` puts its documents (import/import.h). Tokens
// arrive as raw bytes in the input's type, already checked (TokenChecker), and are gathered as
// they are; a shard is written when the next document would take it past `shard_tokens`, and a
// longer document is streamed into a shard of its own. Shards are FOLDER/part-RRRRR-KKKKK.h5.
//
// Each shard's `source` attribute is JSON naming the format and, for every input the shard's
// documents came from, its path, size and the range [from, to) of that input they are (Megatron:
// document indices; npy: token positions; MDS: sample indices) -- docs/format.md.
//
// With `narrow`, a shard's type is the narrowest unsigned one that holds its ids (that of
// vocab_size when given), never wider than the input's; a document streamed on its own keeps the
// input's type unless vocab_size fixes it. Not thread safe, not collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shard/shard_writer.h"
#include "stoker/token_type.h"

namespace stoker {

// One input as a shard's `source` attribute names it.
struct SourceFile {
  std::string path;  // absolute
  uint64_t bytes = 0;
};

struct SinkSettings {
  std::string folder;  // where the shards go
  int rank = 0;
  uint64_t shard_tokens = uint64_t{1} << 26;
  bool narrow = false;
  std::optional<uint64_t> vocab_size;
  std::optional<uint64_t> eos_id;
  std::string format;  // "megatron", "npy", "mds"
  std::string unit;    // what from/to count: "documents", "token positions", "samples"
};

class ImportSink {
 public:
  // ConfigError when `rank` cannot be named in five digits.
  ImportSink(SinkSettings settings, TokenType type, std::vector<SourceFile> sources);
  ~ImportSink();
  ImportSink(const ImportSink&) = delete;
  ImportSink& operator=(const ImportSink&) = delete;

  // Starts a document of `length` tokens, at [position, end_position) of input `source`.
  void StartDoc(uint64_t length, size_t source, uint64_t position, uint64_t end_position);
  // Tokens of the document, in the input's type; `max_id` is their largest id.
  void Append(std::span<const std::byte> raw, int64_t max_id);
  void EndDoc();
  // Writes the gathered documents as a shard (nothing when there are none).
  void Flush();

  uint64_t docs() const { return docs_; }
  uint64_t tokens() const { return tokens_; }
  uint64_t shards() const { return shards_; }
  // The types of the shards written, each once, in order of first use.
  const std::vector<TokenType>& types() const { return types_; }

  // The part of one input a shard holds.
  struct SourceRange {
    size_t source;
    uint64_t from, to;
  };

 private:
  std::string NextPath();
  TokenType NarrowType(int64_t max_id) const;
  ShardAttributes Attributes(const std::vector<SourceRange>& ranges) const;
  void Note(TokenType type);

  SinkSettings settings_;
  TokenType type_;
  int size_;
  std::vector<SourceFile> sources_;
  std::vector<std::byte> gathered_;
  std::vector<uint64_t> offsets_;  // of the gathered documents; empty when there are none
  std::vector<SourceRange> ranges_;
  int64_t max_id_ = 0;
  std::unique_ptr<ShardWriter> direct_;  // a document longer than a shard
  TokenType direct_type_ = TokenType::kUint16;
  std::vector<TokenType> types_;
  uint64_t docs_ = 0, tokens_ = 0, shards_ = 0;
};

}  // namespace stoker

// ShardSink: where one rank of `stoker pack` puts its documents (tools/pack.h). Documents are
// gathered in a TokenBuffer and written as shards of at most PackSpec::shard_tokens tokens, named
// OUT/part-RRRRR-KKKKK.h5 (R = rank, K = shard on that rank, 5 digits each: at most 100,000 ranks
// and 100,000 shards a rank, so that path order is input order). A document longer than a shard
// gets a shard of its own, streamed straight to disk when its token type is known up front.
//
// The sink owns the shards it wrote until the run succeeds: RemoveWritten() deletes them after a
// failure anywhere. Not thread safe, not collective (PackDataset makes the collectives).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "shard/shard_writer.h"
#include "tools/pack.h"

namespace stoker {

// What the documents of a run are: one run takes either byte-tokenized text or token-id arrays.
enum class DocKind : uint8_t { kNone, kBytes, kIds };

// "text (byte-tokenized)" or "token-id arrays", for messages.
const char* KindName(DocKind kind);

// The tokens of the shard being gathered: uint32 (half the memory) until an id needs uint64, then
// uint64 for the rest of the run.
class TokenBuffer {
 public:
  // Reserves room (address space, not yet memory) for `expected` tokens.
  explicit TokenBuffer(uint64_t expected) { narrow_.reserve(expected); }
  void Append(std::span<const uint64_t> tokens);
  uint64_t size() const { return wide_ ? wide_tokens_.size() : narrow_.size(); }
  uint64_t max() const { return max_; }
  void WriteTo(ShardWriter* writer) const;
  // Keeps the memory for the next shard: touching fresh memory costs as much as packing.
  void Clear();

 private:
  bool wide_ = false;
  std::vector<uint32_t> narrow_;
  std::vector<uint64_t> wide_tokens_;
  uint64_t max_ = 0;
};

class ShardSink {
 public:
  // Reserves room for one shard (up to 2^26 tokens). ConfigError when `rank` cannot be named in
  // five digits. `spec` must outlive the sink.
  ShardSink(const PackSpec& spec, int rank);

  // Starts a document of `length` tokens; `where` names it in messages ("in.jsonl:3"). Writes the
  // gathered shard first when the document would not fit. DataError when the document is not of
  // the run's kind.
  void StartDoc(DocKind kind, uint64_t length, const std::string& where);
  void Append(std::span<const uint64_t> tokens);
  void EndDoc();
  // Writes the gathered documents as a shard (nothing when there are none).
  void Flush();
  // Removes every shard this sink wrote (after a failure anywhere).
  void RemoveWritten();

  DocKind kind() const { return kind_; }
  const std::string& first_doc() const { return first_doc_; }
  uint64_t docs() const { return docs_; }
  uint64_t tokens() const { return tokens_appended_; }
  uint64_t shards() const { return written_.size(); }

 private:
  void CheckKind(DocKind kind, const std::string& where);
  std::string NextPath();
  TokenType TypeFor(uint64_t max_id) const;
  ShardAttributes Attributes() const;

  const PackSpec& spec_;
  int rank_;
  DocKind kind_ = DocKind::kNone;
  std::string first_doc_;
  TokenBuffer tokens_;
  std::vector<uint64_t> offsets_;  // of the gathered documents; empty when there are none
  std::unique_ptr<ShardWriter> direct_;
  std::vector<std::string> written_;
  uint64_t docs_ = 0, tokens_appended_ = 0;
};

}  // namespace stoker

// Test support: temporary folders, shard files and the checks every test file needs.
//
// Tests make their own small HDF5 files; no binary files are checked in. WriteTestShard writes a
// good shard the way stoker does. WriteRawShard crafts any file, including the broken ones that
// `stoker verify` must catch: it is test-only code and talks to HDF5 directly for that reason.
// OnRankZero and SharedTempDir are collective; the rest is local to the calling rank.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mpi/comm.h"
#include "shard/shard_writer.h"
#include "stoker/corpus.h"

namespace stoker::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with its contents at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Collective over `comm`: one folder for all ranks (rank 0 makes it and broadcasts its name; it
// removes it after a barrier at destruction).
class SharedTempDir {
 public:
  explicit SharedTempDir(MPI_Comm comm);
  ~SharedTempDir();
  SharedTempDir(const SharedTempDir&) = delete;
  SharedTempDir& operator=(const SharedTempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  MPI_Comm comm_;
  std::string path_;
};

// Writes a good shard whose documents are `docs` (each a vector of token ids).
void WriteTestShard(const std::string& path, const std::vector<std::vector<uint64_t>>& docs,
                    TokenType type = TokenType::kUint32, const ShardAttributes& attributes = {});

// An HDF5 dataset as a test wants it: any type name HDF5 knows here ("uint8" ... "int64",
// "float32", "float64"), any shape, values converted by HDF5 from int64.
struct RawArray {
  std::string type = "uint32";
  std::vector<uint64_t> dims;  // empty: 1-D of values.size()
  std::vector<int64_t> values;
  bool chunked = false;  // chunked layout (1 MiB chunks) instead of contiguous
  // Give HDF5 the values' bits as uint64 rather than int64: -1 is stored as 2^64 - 1 in a uint64
  // dataset (for ids above 2^63 - 1, which no int64 holds).
  bool unsigned_values = false;
};

// Root attributes are scalars: int64, uint64 (for values above 2^63 - 1), float64 or strings.
struct RawShard {
  std::optional<RawArray> tokens;
  std::optional<RawArray> doc_offsets;
  std::map<std::string, int64_t> int_attributes = {{"stoker_format_version", 1}};
  std::map<std::string, uint64_t> uint64_attributes;
  std::map<std::string, double> float_attributes;
  std::map<std::string, std::string> string_attributes;
};

void WriteRawShard(const std::string& path, const RawShard& shard);

// Document offsets (n + 1 entries from 0) for the given document lengths.
std::vector<int64_t> OffsetsFor(const std::vector<uint64_t>& lengths);

// A shard of documents of the given lengths, tokens 1, 2, 3, ... in the raw type `type`, offsets
// uint64.
RawShard ShardOfLengths(const std::vector<uint64_t>& lengths, const std::string& type = "uint32");

using Docs = std::vector<std::vector<uint64_t>>;

// The documents' tokens, concatenated; `offsets` gets their n + 1 offsets.
std::vector<uint64_t> Flatten(const Docs& docs, std::vector<uint64_t>* offsets);

// The content checksum (tokens/content_checksum.h) of a shard of `docs` in `type`.
uint64_t ChecksumOf(const Docs& docs, TokenType type);

// The largest id a shard of `type` holds: the type's maximum, at most 2^63 - 1.
uint64_t MaxTokenId(TokenType type);

// `n_docs` documents of up to 300 tokens (some empty) whose ids reach MaxTokenId(type), from a
// random stream keyed by `key`. The first document is {0, MaxTokenId(type), 1}.
Docs MakeDocs(TokenType type, uint64_t key, int n_docs);

// Every document of a shard of a discovered corpus, read back through ShardReader.
Docs ReadShardDocs(const std::string& root, const ShardInfo& shard);

// Writes `text` to `path`, making its folder first.
void WriteText(const std::string& path, const std::string& text);

// The bytes of the file at `path`.
std::string ReadFileBytes(const std::string& path);

// Expects `part` to appear in `message`.
void ExpectMentions(const std::string& message, const std::string& part);

// Collective over `comm`: rank 0 runs `make` (writes test files, say); every rank then fails
// together, with rank 0's error, if it threw, so that no rank is left waiting in a collective.
void OnRankZero(const mpi::Comm& comm, const std::function<void()>& make);

// Expects `call` to throw Kind marked collective (thrown by every rank together) with every one
// of `words` in its message. Returns the message ("" when `call` did not throw). Any other
// exception propagates and fails the test.
template <typename Kind>
std::string ExpectCollectiveError(const std::function<void()>& call,
                                  const std::vector<std::string>& words) {
  try {
    call();
  } catch (const Kind& e) {
    EXPECT_TRUE(e.collective()) << "not collective: " << e.what();
    for (const auto& word : words) ExpectMentions(e.what(), word);
    return e.what();
  }
  ADD_FAILURE() << "no error thrown; expected one mentioning '" << words.at(0) << "'";
  return "";
}

}  // namespace stoker::testing

// A corpus: a folder of datasets, each a folder of HDF5 token shards (docs/format.md).
//
// DiscoverCorpus builds the corpus table every rank works from. It is collective over `comm`:
// rank 0 lists the files and broadcasts the list, the ranks read the per-file metadata in
// parallel (file i by rank i mod W) and all-gather it, so every rank ends with the same table and
// fingerprint. No rank walks the whole tree or opens every file. A bad file makes every rank
// throw the same DataError (collective), naming the file and the problem.
//
// The table is a plain value: copyable, comparable, and safe to read from any thread.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/token_type.h"

namespace stoker {

// What a shard records of its tokenizer's vocabulary (docs/format.md, optional attributes).
struct ShardVocabulary {
  std::optional<int64_t> vocab_size;
  std::optional<int64_t> eos_id;
  std::optional<int64_t> bos_id;
  std::optional<std::string> tokenizer;
  bool operator==(const ShardVocabulary&) const = default;
};

struct ShardInfo {
  std::string path;      // relative to the corpus root, e.g. "web/2024/part-00003.h5"
  uint32_t dataset = 0;  // index into CorpusTable::datasets
  TokenType token_type = TokenType::kUint32;
  bool offsets_signed = false;  // /doc_offsets is int64 rather than uint64
  uint64_t file_bytes = 0;
  uint64_t docs = 0;    // documents: length of /doc_offsets minus one
  uint64_t tokens = 0;  // length of /tokens
  // XXH3-64 of the offsets and tokens, as the writer recorded it (attribute `checksum`,
  // docs/format.md); none in a shard written before stoker recorded one.
  std::optional<uint64_t> checksum;
  // Never null. Shards that record the same share one: a table of a million shards holds a
  // handful (a row of the table is some 100 bytes with its path).
  std::shared_ptr<const ShardVocabulary> vocabulary = NoVocabulary();

  static const std::shared_ptr<const ShardVocabulary>& NoVocabulary();
  bool operator==(const ShardInfo& other) const;
};

struct DatasetInfo {
  std::string name;          // the folder's name: the unit of mixing
  uint32_t first_shard = 0;  // its shards are shards[first_shard, first_shard + num_shards)
  uint32_t num_shards = 0;
  uint64_t docs = 0;
  uint64_t tokens = 0;
  bool operator==(const DatasetInfo&) const = default;
};

struct CorpusTable {
  std::string root;                   // the folder as given
  std::vector<DatasetInfo> datasets;  // sorted by name
  std::vector<ShardInfo> shards;      // grouped by dataset, sorted by relative path
  // 32 hex digits identifying the corpus's content (names, paths, sizes, counts, types): two
  // copies of a corpus in different places have the same fingerprint.
  std::string fingerprint;

  uint64_t total_docs() const;
  uint64_t total_tokens() const;
  bool operator==(const CorpusTable&) const = default;
};

// One thing wrong with a corpus. `file` is relative to the corpus root (a dataset folder for a
// dataset without shards, empty for the corpus itself); `object` is the HDF5 object inside the
// file ("/tokens", "/doc_offsets", an attribute), `index` the element where it applies.
struct Problem {
  std::string file;
  std::string object;
  std::optional<uint64_t> index;
  std::string message;
  // "web/part-00001.h5: /doc_offsets[17]: offset 12 is below the previous offset 40"
  std::string ToString() const;
  bool operator==(const Problem&) const = default;
};

// A table of the shards that passed the metadata checks, and what is wrong with the others.
struct CorpusScan {
  CorpusTable table;
  std::vector<Problem> problems;
};

// Collective over `comm`. Lists and describes the corpus at `root`, reporting bad files as
// problems rather than throwing. Throws (collectively) only when `root` is not a readable folder.
CorpusScan ScanCorpus(MPI_Comm comm, const std::string& root);

// Collective over `comm`. Like ScanCorpus, but any problem makes every rank throw DataError.
CorpusTable DiscoverCorpus(MPI_Comm comm, const std::string& root);

}  // namespace stoker

// DocIndex: where a dataset's document lies, without holding every document offset in memory.
//
// Documents are numbered across a dataset's files in table order. Locate(dataset, doc) finds the
// file by binary search over per-file document counts (memory: one number per file), then reads
// the two offsets it needs from a bounded cache of /doc_offsets blocks (kBlock entries each,
// least recently used evicted). Memory per rank therefore does not grow with the number of
// documents in the corpus: it is capped by `cache_bytes`.
//
// Owned by one thread (the loader's reading thread); not thread safe.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "core/row_planner.h"
#include "loader/shard_pool.h"
#include "stoker/corpus.h"

namespace stoker {

class DocIndex {
 public:
  static constexpr uint64_t kBlock = 512;  // offsets per cached block: 4 KiB

  // `table` and `pool` must outlive the index.
  DocIndex(const CorpusTable& table, ShardPool* pool, uint64_t cache_bytes);

  DocSpan Locate(uint32_t dataset, uint64_t doc);

  uint64_t block_reads() const { return block_reads_; }
  uint64_t lookups() const { return lookups_; }

 private:
  const uint64_t* Block(uint32_t file, uint64_t block);

  const CorpusTable& table_;
  ShardPool* pool_;
  uint64_t max_blocks_;
  std::vector<std::vector<uint64_t>> first_doc_;  // per dataset: first doc number of each file
  struct CachedBlock {
    uint64_t key;
    std::vector<uint64_t> offsets;  // kBlock + 1 entries (or fewer at a file's end)
  };
  std::list<CachedBlock> lru_;  // most recent first
  std::unordered_map<uint64_t, std::list<CachedBlock>::iterator> index_;
  uint64_t block_reads_ = 0;
  uint64_t lookups_ = 0;
};

}  // namespace stoker

// DocIndex: where a dataset's document lies, without holding every document offset in memory,
// and with the offsets of the documents ahead read while the batches ahead are.
//
// Documents are numbered across a dataset's files in table order. Locate(dataset, doc) finds the
// file by binary search over per-file document counts (memory: one number per file), then takes
// the two offsets it needs from a block of /doc_offsets (kBlock entries), read when first needed.
//
// Hold(dataset, doc) says that the planner will locate that document soon (the loader learns
// which from RowPlanner::LookAhead): its block is read now, through the ReadRouter, among the
// token reads in flight, and kept until Release. Locate of a block being read waits for it, and
// a failed read throws where the block is located, naming the file and the byte offset, as a
// read on the spot would. Files whose offsets are not stored directly (read through HDF5) are
// not held: Hold returns false, and their blocks are read on the spot.
//
// Memory per rank does not grow with the number of documents in the corpus: `cache_bytes` caps
// the blocks held and the blocks kept for reuse together (least recently used dropped first);
// the caller holds at most max_held() blocks, half of them, so that what is held never crowds
// out what is reused.
//
// Owned by one thread (the loader's reading thread); not thread safe. The router must be closed
// before the index goes while its reads are in flight.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <unordered_map>
#include <vector>

#include "loader/read_router.h"
#include "loader/shard_pool.h"
#include "packing/row_planner.h"
#include "stoker/corpus.h"

namespace stoker {

class DocIndex : private ReadRouter::Client {
 public:
  static constexpr uint64_t kBlock = 512;  // offsets per block: 4 KiB

  // `table`, `pool` and `router` must outlive the index; it adds itself to the router.
  DocIndex(const CorpusTable& table, ShardPool* pool, ReadRouter* router, uint64_t cache_bytes);

  DocSpan Locate(uint32_t dataset, uint64_t doc);
  bool Hold(uint32_t dataset, uint64_t doc);  // false: not held (see above), no Release
  void Release(uint32_t dataset, uint64_t doc);

  uint64_t max_held() const { return max_blocks_ / 2; }
  // Every block of the corpus is read and stays, the cache holding them all: from now on no
  // document needs a read of offsets, so holding ahead has nothing left to do.
  bool HoldsEveryBlock() const {
    return corpus_blocks_ <= max_blocks_ && blocks_.size() == corpus_blocks_ && reading_ == 0;
  }
  uint64_t block_reads() const { return block_reads_; }
  uint64_t lookups() const { return lookups_; }
  // Locates that found their block still being read, and that read it on the spot.
  uint64_t waits() const { return waits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct Block {
    uint32_t file = 0;
    uint64_t first = 0;  // of the block's entries in the file's /doc_offsets
    std::vector<uint64_t> offsets;
    uint32_t holds = 0;
    bool reading = false;  // queued or in flight
    ReadResult read;       // what the read returned, checked where the block is located
    std::shared_ptr<ShardReader> reader;  // its file, while in flight
    std::list<uint64_t>::iterator lru;    // in lru_ while nobody holds it and it is read
  };
  struct Place {
    uint32_t file;
    uint64_t local;  // document number within the file
  };
  Place Find(uint32_t dataset, uint64_t doc) const;
  static uint64_t Key(uint32_t file, uint64_t local) {
    return uint64_t{file} << 32 | local / kBlock;
  }
  // The block holding document `local` of `file`, read if it is not there: on the spot, or
  // queued for the router when `queue` (only for offsets stored directly).
  Block& Get(uint32_t file, uint64_t local, bool queue);
  void StartReads() override;
  void Finished(uint64_t key, const ReadResult& read) override;
  void Unused(uint64_t key, Block& block);  // into lru_, dropping the least recent beyond the cap

  const CorpusTable& table_;
  ShardPool* pool_;
  ReadRouter* router_;
  uint32_t client_;
  uint64_t max_blocks_;
  uint64_t corpus_blocks_ = 0;                    // blocks of every file's /doc_offsets
  uint64_t reading_ = 0;                          // blocks queued or in flight
  std::vector<std::vector<uint64_t>> first_doc_;  // per dataset: first doc number of each file
  std::unordered_map<uint64_t, Block> blocks_;    // by Key
  std::list<uint64_t> lru_;                       // keys of read blocks nobody holds, recent first
  std::deque<uint64_t> queued_;                   // keys of blocks to read, not started yet
  uint64_t block_reads_ = 0;
  uint64_t lookups_ = 0;
  uint64_t waits_ = 0;
  uint64_t misses_ = 0;
};

}  // namespace stoker

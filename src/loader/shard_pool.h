// ShardPool: a bounded set of open ShardReaders, least recently used closed first.
//
// The corpus must not change during a run: every open of a shard checks it against the table of
// discovery and against what this pool saw before, and throws DataError naming the file and what
// changed (docs/reliability.md, "A shard changes on disk"):
//   - its size (fstat) differs from the size discovery recorded;
//   - at the first open: /doc_offsets[0] is not 0 or /doc_offsets[docs] is not the discovered
//     token count (the arrays moved or were rewritten with other documents, at the same size);
//   - at a later open: its inode, device or modification time differ from the first open's
//     (replaced, or written in place, while the run was going).
// What it cannot see: a change to the bytes of tokens between discovery and the first open that
// keeps the size, both end offsets and happens before this pool first stats the file, or a
// write into a file while it stays open (reads then return the new bytes); a change restoring
// the modification time. Cost: one fstat per open, two 8-byte reads per first open. Every file it
// opens is advised random reads (ShardReader::AdviseRandomReads): the loader reads it so.
//
// Owned by one thread (the loader's reading thread); not thread safe. A reader returned by Get()
// stays valid until the next Get(); one returned by Share() as long as it is held, also once the
// pool closed its file (reads in flight hold their file that way, so that a file closed under them
// cannot be replaced by another with the same descriptor: open files may exceed `max_open` by the
// readers so held).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shard/shard_reader.h"
#include "stoker/corpus.h"

namespace stoker {

class ShardPool {
 public:
  // `table` and `arrays` (where discovery found each shard's arrays, in table order) must
  // outlive the pool.
  // With `direct_reads`, every file is also opened for O_DIRECT token reads
  // (ShardReader::OpenDirect).
  ShardPool(const CorpusTable& table, const std::vector<ArrayLocations>& arrays, uint32_t max_open,
            bool direct_reads = false);

  // The open reader of table row `file`, opening (and checking) it if needed. Throws IoError
  // (cannot open or stat) or DataError (changed since discovery), naming the file.
  ShardReader& Get(uint32_t file);
  std::shared_ptr<ShardReader> Share(uint32_t file);
  // Where discovery found table row `file`'s arrays (no open).
  const ArrayLocations& locations(uint32_t file) const { return arrays_.at(file); }
  uint64_t opens() const { return opens_; }
  bool direct_reads() const { return direct_reads_; }

 private:
  void CheckUnchanged(ShardReader& reader, uint32_t file);

  const CorpusTable& table_;
  const std::vector<ArrayLocations>& arrays_;
  uint32_t max_open_;
  bool direct_reads_;
  std::list<std::pair<uint32_t, std::shared_ptr<ShardReader>>> lru_;  // most recent first
  std::unordered_map<uint32_t, decltype(lru_)::iterator> index_;
  std::unordered_map<uint32_t, FileStamp> first_seen_;  // at each file's first open
  uint64_t opens_ = 0;
};

}  // namespace stoker

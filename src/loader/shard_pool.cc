#include "loader/shard_pool.h"

#include <algorithm>

#include "base/check.h"

namespace stoker {

namespace {

constexpr char kMustNotChange[] =
    "the corpus must not change during a run (write a changed corpus to a new folder and start a "
    "new run on it)";

}  // namespace

ShardPool::ShardPool(const CorpusTable& table, const std::vector<ArrayLocations>& arrays,
                     uint32_t max_open, bool direct_reads)
    : table_(table),
      arrays_(arrays),
      max_open_(std::max<uint32_t>(1, max_open)),
      direct_reads_(direct_reads) {}

ShardReader& ShardPool::Get(uint32_t file) { return *Share(file); }

std::shared_ptr<ShardReader> ShardPool::Share(uint32_t file) {
  if (auto it = index_.find(file); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return lru_.front().second;
  }
  STOKER_ASSERT(file < table_.shards.size() && file < arrays_.size(), "file {} of {} ({} located)",
                file, table_.shards.size(), arrays_.size());
  const ShardInfo& shard = table_.shards[file];
  auto reader = std::make_shared<ShardReader>(
      table_.root, shard, arrays_[file],
      shard.dataset < table_.datasets.size() ? table_.datasets[shard.dataset].name : "");
  CheckUnchanged(*reader, file);
  reader->AdviseRandomReads();
  if (direct_reads_) reader->OpenDirect();
  if (lru_.size() >= max_open_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  lru_.emplace_front(file, std::move(reader));
  index_[file] = lru_.begin();
  ++opens_;
  return lru_.front().second;
}

void ShardPool::CheckUnchanged(ShardReader& reader, uint32_t file) {
  const ShardInfo& shard = reader.shard();
  const FileStamp now = reader.Stat();
  STOKER_CHECK(now.bytes == shard.file_bytes, DataError,
               "{}: changed on disk since discovery: its size is {} bytes, discovery found {}; {}",
               reader.where(), now.bytes, shard.file_bytes, kMustNotChange);
  const auto seen = first_seen_.find(file);
  if (seen == first_seen_.end()) {  // remembered only once the file passed the checks
    uint64_t ends[2] = {1, 0};
    reader.ReadOffsets(0, 1, &ends[0]);
    reader.ReadOffsets(shard.docs, 1, &ends[1]);
    STOKER_CHECK(ends[0] == 0 && ends[1] == shard.tokens, DataError,
                 "{}: changed on disk since discovery: /doc_offsets runs from {} to {}, "
                 "discovery found 0 to {} ({} tokens); {}",
                 reader.where(), ends[0], ends[1], shard.tokens, shard.tokens, kMustNotChange);
    first_seen_.emplace(file, now);
    return;
  }
  STOKER_CHECK(seen->second == now, DataError,
               "{}: changed on disk while the run was going: {} since this rank first opened "
               "it; {}",
               reader.where(),
               seen->second.inode != now.inode || seen->second.device != now.device
                   ? "replaced by another file"
                   : "modified (modification time differs)",
               kMustNotChange);
}

}  // namespace stoker

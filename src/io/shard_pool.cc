#include "io/shard_pool.h"

#include "base/check.h"

namespace stoker {

ShardPool::ShardPool(const CorpusTable& table, uint32_t max_open)
    : table_(table), max_open_(std::max<uint32_t>(1, max_open)) {}

ShardReader& ShardPool::Get(uint32_t file) {
  if (auto it = index_.find(file); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return *lru_.front().second;
  }
  STOKER_ASSERT(file < table_.shards.size(), "file {} of {}", file, table_.shards.size());
  if (lru_.size() >= max_open_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  lru_.emplace_front(file, std::make_unique<ShardReader>(table_.root, table_.shards[file]));
  index_[file] = lru_.begin();
  ++opens_;
  return *lru_.front().second;
}

}  // namespace stoker

#include "loader/doc_index.h"

#include <algorithm>

#include "base/check.h"

namespace stoker {

DocIndex::DocIndex(const CorpusTable& table, ShardPool* pool, uint64_t cache_bytes)
    : table_(table),
      pool_(pool),
      max_blocks_(std::max<uint64_t>(4, cache_bytes / ((kBlock + 1) * sizeof(uint64_t)))) {
  for (const DatasetInfo& dataset : table_.datasets) {
    auto& first = first_doc_.emplace_back();
    uint64_t docs = 0;
    for (uint32_t i = 0; i < dataset.num_shards; ++i) {
      first.push_back(docs);
      docs += table_.shards[dataset.first_shard + i].docs;
    }
  }
}

DocSpan DocIndex::Locate(uint32_t dataset, uint64_t doc) {
  ++lookups_;
  const auto& first = first_doc_[dataset];
  const auto it = std::upper_bound(first.begin(), first.end(), doc);
  STOKER_ASSERT(it != first.begin(), "document {} of dataset {}", doc, dataset);
  const auto file =
      static_cast<uint32_t>(table_.datasets[dataset].first_shard + (it - first.begin() - 1));
  const uint64_t local = doc - *(it - 1);
  STOKER_ASSERT(local < table_.shards[file].docs, "document {} of dataset {}", doc, dataset);
  const uint64_t* offsets = Block(file, local / kBlock);
  const uint64_t begin = offsets[local % kBlock];
  const uint64_t end = offsets[local % kBlock + 1];
  STOKER_CHECK(begin <= end && end <= table_.shards[file].tokens, DataError,
               "{}/{}: /doc_offsets[{}] = {}, [{}] = {} do not lie within /tokens of {} tokens "
               "(stoker verify checks every offset)",
               table_.root, table_.shards[file].path, local, begin, local + 1, end,
               table_.shards[file].tokens);
  return {file, begin, end - begin};
}

const uint64_t* DocIndex::Block(uint32_t file, uint64_t block) {
  const uint64_t key = (static_cast<uint64_t>(file) << 40) | block;
  if (auto it = index_.find(key); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return lru_.front().offsets.data();
  }
  std::vector<uint64_t> offsets;
  if (lru_.size() >= max_blocks_) {
    offsets = std::move(lru_.back().offsets);  // reuse the evicted block's memory
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  const uint64_t first = block * kBlock;
  const uint64_t count = std::min(kBlock + 1, table_.shards[file].docs + 1 - first);
  offsets.resize(count);
  pool_->Get(file).ReadOffsets(first, count, offsets.data());
  ++block_reads_;
  lru_.push_front({key, std::move(offsets)});
  index_[key] = lru_.begin();
  return lru_.front().offsets.data();
}

}  // namespace stoker

#include "loader/doc_index.h"

#include <algorithm>

#include "base/check.h"
#include "shard/shard_reader.h"

namespace stoker {

DocIndex::DocIndex(const CorpusTable& table, ShardPool* pool, ReadRouter* router,
                   uint64_t cache_bytes)
    : table_(table),
      pool_(pool),
      router_(router),
      client_(router->Add(this)),
      max_blocks_(std::max<uint64_t>(4, cache_bytes / ((kBlock + 1) * sizeof(uint64_t)))) {
  STOKER_ASSERT(table_.shards.size() < (uint64_t{1} << 28), "{} files", table_.shards.size());
  for (const ShardInfo& shard : table_.shards) corpus_blocks_ += (shard.docs + kBlock - 1) / kBlock;
  for (const DatasetInfo& dataset : table_.datasets) {
    auto& first = first_doc_.emplace_back();
    uint64_t docs = 0;
    for (uint32_t i = 0; i < dataset.num_shards; ++i) {
      first.push_back(docs);
      docs += table_.shards[dataset.first_shard + i].docs;
    }
  }
}

DocIndex::Place DocIndex::Find(uint32_t dataset, uint64_t doc) const {
  const auto& first = first_doc_[dataset];
  const auto it = std::upper_bound(first.begin(), first.end(), doc);
  STOKER_ASSERT(it != first.begin(), "document {} of dataset {}", doc, dataset);
  const auto file =
      static_cast<uint32_t>(table_.datasets[dataset].first_shard + (it - first.begin() - 1));
  const uint64_t local = doc - *(it - 1);
  STOKER_ASSERT(local < table_.shards[file].docs && local / kBlock < (uint64_t{1} << 32),
                "document {} of dataset {}", doc, dataset);
  return {file, local};
}

DocSpan DocIndex::Locate(uint32_t dataset, uint64_t doc) {
  ++lookups_;
  const auto [file, local] = Find(dataset, doc);
  const uint64_t key = Key(file, local);
  auto it = blocks_.find(key);
  if (it != blocks_.end() && it->second.reading) {
    ++waits_;
    while (it != blocks_.end() && it->second.reading) {
      router_->Reap(/*wait=*/true);
      it = blocks_.find(key);  // blocks finished meanwhile may have dropped this one
      STOKER_ASSERT(it == blocks_.end() || !it->second.reading ||
                        router_->queue().in_flight() > 0 || !queued_.empty(),
                    "offsets of {} at {} are neither queued nor in flight", file, local);
    }
  }
  if (it == blocks_.end()) ++misses_;
  Block& block = it == blocks_.end() ? Get(file, local, /*queue=*/false) : it->second;
  if (block.read.error != 0 || block.read.bytes != block.offsets.size() * sizeof(uint64_t)) {
    pool_->Get(file).CheckOffsetRead(block.read, block.first, block.offsets.size());
  }
  if (block.holds == 0) lru_.splice(lru_.begin(), lru_, block.lru);
  const uint64_t begin = block.offsets[local - block.first];
  const uint64_t end = block.offsets[local - block.first + 1];
  CheckDocumentOffsets(table_.root, table_.shards[file], local, begin, end);
  return {file, begin, end - begin};
}

bool DocIndex::Hold(uint32_t dataset, uint64_t doc) {
  const auto [file, local] = Find(dataset, doc);
  if (!pool_->locations(file).offsets.direct) return false;
  Block& block = Get(file, local, /*queue=*/true);
  if (block.holds++ == 0 && !block.reading) lru_.erase(block.lru);
  return true;
}

void DocIndex::Release(uint32_t dataset, uint64_t doc) {
  const auto [file, local] = Find(dataset, doc);
  const uint64_t key = Key(file, local);
  Block& block = blocks_.at(key);
  STOKER_ASSERT(block.holds > 0, "document {} of dataset {} released but not held", doc, dataset);
  if (--block.holds == 0 && !block.reading) Unused(key, block);
}

DocIndex::Block& DocIndex::Get(uint32_t file, uint64_t local, bool queue) {
  const uint64_t key = Key(file, local);
  auto [it, added] = blocks_.try_emplace(key);
  Block& block = it->second;
  if (!added) return block;
  block.file = file;
  block.first = local / kBlock * kBlock;
  block.offsets.resize(std::min(kBlock + 1, table_.shards[file].docs + 1 - block.first));
  ++block_reads_;
  if (queue) {
    block.reading = true;
    ++reading_;
    queued_.push_back(key);
  } else {
    pool_->Get(file).ReadOffsets(block.first, block.offsets.size(), block.offsets.data());
    block.read = {.bytes = block.offsets.size() * sizeof(uint64_t), .error = 0};
    Unused(key, block);
  }
  return block;
}

void DocIndex::StartReads() {
  while (!queued_.empty() && router_->has_room()) {
    const uint64_t key = queued_.front();
    queued_.pop_front();
    Block& block = blocks_.at(key);
    block.reader = pool_->Share(block.file);
    auto request =
        block.reader->OffsetRequest(block.first, block.offsets.size(), block.offsets.data());
    STOKER_ASSERT(request.has_value(), "offsets of {} queued, not stored directly", block.file);
    request->tag = key;
    router_->Submit(client_, *request);
  }
}

void DocIndex::Finished(uint64_t key, const ReadResult& read) {
  Block& block = blocks_.at(key);
  block.reading = false;
  --reading_;
  block.read = read;
  block.reader.reset();
  if (block.holds == 0) Unused(key, block);
}

// The block just put first stays, even when what is held fills the cap for a moment.
void DocIndex::Unused(uint64_t key, Block& block) {
  lru_.push_front(key);
  block.lru = lru_.begin();
  while (blocks_.size() > max_blocks_ && lru_.size() > 1) {
    blocks_.erase(lru_.back());
    lru_.pop_back();
  }
}

}  // namespace stoker

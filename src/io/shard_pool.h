// ShardPool: a bounded set of open ShardReaders, least recently used closed first.
//
// Owned by one thread (the loader's reading thread); not thread safe. A reader returned by Get()
// stays valid until the next Get().
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "io/token_reader.h"
#include "stoker/corpus.h"

namespace stoker {

class ShardPool {
 public:
  // `table` must outlive the pool.
  ShardPool(const CorpusTable& table, uint32_t max_open);

  ShardReader& Get(uint32_t file);
  uint64_t opens() const { return opens_; }

 private:
  const CorpusTable& table_;
  uint32_t max_open_;
  std::list<std::pair<uint32_t, std::unique_ptr<ShardReader>>> lru_;  // most recent first
  std::unordered_map<uint32_t, decltype(lru_)::iterator> index_;
  uint64_t opens_ = 0;
};

}  // namespace stoker

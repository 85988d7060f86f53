// DatasetOrder: the global order of one dataset's documents, epoch by epoch.
//
// In epoch e, position p of the dataset's order holds document Permutation(n, key(seed, name,
// e)).At(p): a keyed pseudo-random permutation evaluated one index at a time, so no rank ever
// builds or holds the order. Every epoch has its own key, hence its own order. Logical shard j
// covers positions SplitRange(n, L, j) in every epoch: each logical shard is a uniform random
// sample of the whole dataset, across all its files.
//
// Documents are numbered across the dataset's files in table order (file 0's documents, then
// file 1's, ...). Pure value type; thread safe.
#pragma once

#include <cstdint>
#include <string>

#include "order/partition.h"
#include "order/permutation.h"

namespace stoker {

class DatasetOrder {
 public:
  DatasetOrder(uint64_t seed, const std::string& name, uint64_t docs, uint64_t logical_shards);

  // The positions logical shard `shard` covers (the same in every epoch).
  IndexRange Slice(uint64_t shard) const { return SplitRange(docs_, logical_shards_, shard); }
  // The permutation of epoch `epoch`: At(position) is a document number.
  Permutation Epoch(uint64_t epoch) const;

  uint64_t docs() const { return docs_; }
  uint64_t logical_shards() const { return logical_shards_; }

 private:
  uint64_t key_;  // from (seed, name)
  uint64_t docs_;
  uint64_t logical_shards_;
};

}  // namespace stoker

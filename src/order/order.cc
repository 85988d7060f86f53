#include "order/order.h"

#include "order/random.h"

namespace stoker {

DatasetOrder::DatasetOrder(uint64_t seed, const std::string& name, uint64_t docs,
                           uint64_t logical_shards)
    : key_(DeriveKey(seed, "order:" + name)), docs_(docs), logical_shards_(logical_shards) {}

Permutation DatasetOrder::Epoch(uint64_t epoch) const {
  return Permutation(docs_, DeriveKey(key_, "epoch", epoch));
}

}  // namespace stoker

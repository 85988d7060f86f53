#include "order/partition.h"

#include "base/check.h"

namespace stoker {

namespace {

uint64_t Cut(uint64_t n, uint64_t parts, uint64_t part) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(n) * part / parts);
}

}  // namespace

IndexRange SplitRange(uint64_t n, uint64_t parts, uint64_t part) {
  STOKER_ASSERT(parts > 0 && part < parts, "part {} of {}", part, parts);
  return {Cut(n, parts, part), Cut(n, parts, part + 1)};
}

IndexRange OwnedLogicalShards(uint64_t logical_shards, uint64_t world, uint64_t rank) {
  STOKER_ASSERT(world <= logical_shards, "{} ranks for {} logical shards", world, logical_shards);
  return SplitRange(logical_shards, world, rank);
}

uint64_t OwnerOfLogicalShard(uint64_t logical_shards, uint64_t world, uint64_t shard) {
  STOKER_ASSERT(shard < logical_shards, "logical shard {} of {}", shard, logical_shards);
  // The owner r satisfies floor(r*L/W) <= shard < floor((r+1)*L/W). Start from the estimate
  // floor((shard*W + W - 1) / L) region and step to the exact answer.
  uint64_t r = static_cast<uint64_t>(static_cast<unsigned __int128>(shard) * world /
                                     logical_shards);
  while (r + 1 < world && Cut(logical_shards, world, r + 1) <= shard) ++r;
  while (r > 0 && Cut(logical_shards, world, r) > shard) --r;
  return r;
}

}  // namespace stoker

// Partition: how the permuted index space is cut into logical shards and how logical shards are
// owned by ranks. Pure functions of the sizes, the world size and the rank: every rank computes
// its own share, and the same numbers give the same answer on every machine.
//
// A dataset of n documents has, in each epoch, its own permuted order of positions [0, n).
// Logical shard j of L covers positions SplitRange(n, L, j): balanced contiguous runs whose sizes
// differ by at most one. Rank r of W owns logical shards SplitRange(L, W, r): a contiguous run of
// floor(L/W) or ceil(L/W) shards. Any W from 1 to L works; nothing needs to divide anything.
#pragma once

#include <cstdint>

namespace stoker {

struct IndexRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
  bool empty() const { return begin == end; }
  bool contains(uint64_t i) const { return begin <= i && i < end; }
  bool operator==(const IndexRange&) const = default;
};

// Part `part` of [0, n) cut into `parts` balanced contiguous runs: [part*n/parts,
// (part+1)*n/parts), computed without overflow for any 64-bit n and parts.
IndexRange SplitRange(uint64_t n, uint64_t parts, uint64_t part);

// The logical shards rank `rank` of `world` owns.
IndexRange OwnedLogicalShards(uint64_t logical_shards, uint64_t world, uint64_t rank);

// The rank of `world` that owns logical shard `shard`: the inverse of OwnedLogicalShards.
uint64_t OwnerOfLogicalShard(uint64_t logical_shards, uint64_t world, uint64_t shard);

}  // namespace stoker

// Logical shards and their owners (order/partition.h).
#include "order/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

namespace stoker {
namespace {

TEST(Partition, SplitRangeCoversEverythingOnce) {
  for (uint64_t n : {0ull, 1ull, 10ull, 1000ull, 12345ull}) {
    for (uint64_t parts : {1ull, 2ull, 3ull, 7ull, 64ull, 1000ull}) {
      uint64_t next = 0;
      for (uint64_t p = 0; p < parts; ++p) {
        const IndexRange r = SplitRange(n, parts, p);
        EXPECT_EQ(r.begin, next);
        EXPECT_LE(r.size(), n / parts + 1);
        EXPECT_GE(r.size(), n / parts);
        next = r.end;
      }
      EXPECT_EQ(next, n);
    }
  }
}

TEST(Partition, OwnerInvertsOwnership) {
  for (uint64_t shards : {1ull, 7ull, 100ull, 4096ull}) {
    for (uint64_t world = 1; world <= std::min<uint64_t>(shards, 37); ++world) {
      for (uint64_t rank = 0; rank < world; ++rank) {
        const IndexRange owned = OwnedLogicalShards(shards, world, rank);
        EXPECT_FALSE(owned.empty());
        for (uint64_t j = owned.begin; j < owned.end; ++j) {
          ASSERT_EQ(OwnerOfLogicalShard(shards, world, j), rank);
        }
      }
    }
  }
}

TEST(Partition, HugeSizesDoNotOverflow) {
  const uint64_t n = UINT64_MAX;
  const IndexRange last = SplitRange(n, 3, 2);
  EXPECT_EQ(last.end, n);
  EXPECT_EQ(SplitRange(n, 3, 0).end, SplitRange(n, 3, 1).begin);
  EXPECT_EQ(OwnerOfLogicalShard(uint64_t{1} << 24, 1000, (uint64_t{1} << 24) - 1), 999u);
}

}  // namespace
}  // namespace stoker

// A dataset's order, epoch by epoch (order/order.h).
#include "order/order.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace stoker {
namespace {

std::vector<uint64_t> EpochOrder(const DatasetOrder& order, uint64_t epoch) {
  const Permutation p = order.Epoch(epoch);
  std::vector<uint64_t> docs;
  for (uint64_t i = 0; i < order.docs(); ++i) docs.push_back(p.At(i));
  return docs;
}

TEST(DatasetOrder, EveryEpochHoldsEveryDocumentOnce) {
  const DatasetOrder order(7, "web", 1001, 64);
  for (uint64_t epoch : {0, 1, 2, 1000}) {
    const std::vector<uint64_t> docs = EpochOrder(order, epoch);
    EXPECT_EQ(std::set<uint64_t>(docs.begin(), docs.end()).size(), 1001u) << "epoch " << epoch;
    EXPECT_LT(*std::max_element(docs.begin(), docs.end()), 1001u);
  }
}

TEST(DatasetOrder, EpochsSeedsAndNamesGiveOtherOrders) {
  const DatasetOrder web(7, "web", 500, 16);
  EXPECT_NE(EpochOrder(web, 0), EpochOrder(web, 1));
  EXPECT_NE(EpochOrder(web, 0), EpochOrder(DatasetOrder(8, "web", 500, 16), 0));
  EXPECT_NE(EpochOrder(web, 0), EpochOrder(DatasetOrder(7, "code", 500, 16), 0));
  // The same inputs give the same order, on any rank, in any process.
  EXPECT_EQ(EpochOrder(web, 3), EpochOrder(DatasetOrder(7, "web", 500, 16), 3));
  // The logical shards do not shape the order, only how it is cut.
  EXPECT_EQ(EpochOrder(web, 0), EpochOrder(DatasetOrder(7, "web", 500, 61), 0));
}

TEST(DatasetOrder, SlicesCutEveryEpochIntoTheLogicalShards) {
  const DatasetOrder order(1, "books", 100, 7);
  uint64_t next = 0;
  for (uint64_t shard = 0; shard < 7; ++shard) {
    const IndexRange slice = order.Slice(shard);
    EXPECT_EQ(slice.begin, next);
    EXPECT_TRUE(slice.size() == 14 || slice.size() == 15) << slice.size();
    next = slice.end;
  }
  EXPECT_EQ(next, 100u);
}

}  // namespace
}  // namespace stoker

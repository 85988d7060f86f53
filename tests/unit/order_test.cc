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

// A dataset of more documents than 32 bits count (10^11: stoker's aim): the logical shards'
// slices still tile it, and positions and documents above 2^32 map one to one, inside it.
TEST(DatasetOrder, ADatasetOfMoreThan2To32DocumentsIsOrderedWhole) {
  constexpr uint64_t kDocs = uint64_t{100'000'000'000} + 7;
  constexpr uint64_t kShards = 65536;
  const DatasetOrder order(7, "web", kDocs, kShards);
  EXPECT_EQ(order.Slice(0).begin, 0u);
  EXPECT_EQ(order.Slice(kShards - 1).end, kDocs);
  for (uint64_t shard : {uint64_t{0}, uint64_t{4095}, kShards - 2}) {
    EXPECT_EQ(order.Slice(shard).end, order.Slice(shard + 1).begin);
    EXPECT_TRUE(order.Slice(shard).size() == kDocs / kShards ||
                order.Slice(shard).size() == kDocs / kShards + 1);
  }
  const Permutation epoch = order.Epoch(3);
  uint64_t above = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    const uint64_t position = kDocs - 1 - i * 99'999'989;
    const uint64_t doc = epoch.At(position);
    EXPECT_LT(doc, kDocs);
    EXPECT_EQ(epoch.Inverse(doc), position);
    above += doc >> 32 != 0;
  }
  EXPECT_GT(above, 900u);  // 96% of the documents lie above 2^32
}

}  // namespace
}  // namespace stoker

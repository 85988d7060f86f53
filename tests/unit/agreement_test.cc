// mpi::ValuesByRank: how a setting that differs between ranks is named (mpi/agreement.h).
#include "mpi/agreement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stoker::mpi {
namespace {

TEST(ValuesByRank, NamesEachValueWithItsRanksMostCommonFirst) {
  EXPECT_EQ(ValuesByRank({"1", "2"}), "1 on rank 0; 2 on rank 1");
  EXPECT_EQ(ValuesByRank({"8", "16", "8", "8", "8", "8", "16", "8"}),
            "8 on ranks 0, 2-5, 7; 16 on ranks 1, 6");
  EXPECT_EQ(ValuesByRank({"b", "a"}), "b on rank 0; a on rank 1");  // ties: the lowest rank first
  EXPECT_EQ(ValuesByRank({"", "x"}), "\"\" on rank 0; x on rank 1");
}

TEST(ValuesByRank, ManyRanksAndManyValuesStayShort) {
  std::vector<std::string> seeds;  // seed = base + rank over 16,384 ranks
  for (int r = 0; r < 16384; ++r) seeds.push_back(std::to_string(100 + r));
  EXPECT_EQ(ValuesByRank(seeds),
            "100 on rank 0; 101 on rank 1; 102 on rank 2; 103 on rank 3; and 16380 other values "
            "on 16380 more ranks");
  std::vector<std::string> odd_even;  // every other rank differs: runs cut at 8
  for (int r = 0; r < 1000; ++r) odd_even.push_back(r % 2 ? "b" : "a");
  EXPECT_EQ(ValuesByRank(odd_even),
            "a on ranks 0, 2, 4, 6, 8, 10, 12, 14 and 492 more; b on ranks 1, 3, 5, 7, 9, 11, "
            "13, 15 and 492 more");
}

}  // namespace
}  // namespace stoker::mpi

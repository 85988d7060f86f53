// Parallel layouts (stoker/layout.h) without MPI: parsing, the rank order (Megatron's, the first
// name fastest), and the context-parallel part of a batch (loader/context_split.h) on the worked
// example of docs/loader.md.
#include "stoker/layout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loader/context_split.h"
#include "stoker/error.h"

namespace stoker {
namespace {

TEST(Layout, RanksAreNumberedWithTheFirstNameFastest) {
  const ParallelLayout layout = ParseLayout("tp=2,cp=2,dp=4,pp=2");
  EXPECT_EQ(layout.World(), 32);
  EXPECT_EQ(layout.Text(), "tp=2,cp=2,dp=4,pp=2");
  // rank = tp + 2 * (cp + 2 * (dp + 4 * pp))
  const int rank = 1 + 2 * (0 + 2 * (3 + 4 * 1));
  EXPECT_EQ(layout.Coordinate(rank, "tp"), 1);
  EXPECT_EQ(layout.Coordinate(rank, "cp"), 0);
  EXPECT_EQ(layout.Coordinate(rank, "dp"), 3);
  EXPECT_EQ(layout.Coordinate(rank, "pp"), 1);
  EXPECT_EQ(layout.Replica(rank), 3);
  // Within its replica (tp, cp and pp; 8 ranks): tp + 2 * (cp + 2 * pp).
  EXPECT_EQ(layout.RankInReplica(rank), 1 + 2 * (0 + 2 * 1));
  // The ranks that average gradients share tp and pp (dp x cp of them): tp + 2 * pp.
  EXPECT_EQ(layout.GradientGroup(rank), 1 + 2 * 1);
  EXPECT_EQ(layout.GradientGroup(rank - 2), layout.GradientGroup(rank));  // another cp
  EXPECT_EQ(layout.GradientGroup(rank - 4), layout.GradientGroup(rank));  // another dp
  EXPECT_NE(layout.GradientGroup(rank - 1), layout.GradientGroup(rank));  // another tp
}

TEST(Layout, NamesLeftOutHaveSizeOneAndAnyOrderIsARankOrder) {
  const ParallelLayout layout = ParseLayout("dp=4,tp=2");
  EXPECT_EQ(layout.Text(), "dp=4,tp=2,cp=1,pp=1");
  EXPECT_EQ(layout.Coordinate(5, "dp"), 1);  // dp varies fastest here
  EXPECT_EQ(layout.Coordinate(5, "tp"), 1);
  EXPECT_EQ(layout.Size("cp"), 1);
}

TEST(Layout, DataParallelLeftOutIsTheRestOfTheJobJustBeforePipeline) {
  EXPECT_EQ(ParseLayout("tp=2,pp=2").Fit(16).Text(), "tp=2,dp=4,pp=2,cp=1");
  EXPECT_EQ(ParseLayout("cp=2").Fit(8).Text(), "cp=2,tp=1,dp=4,pp=1");
  EXPECT_EQ(ParseLayout("tp=2,dp=4").Fit(8).Text(), "tp=2,dp=4,cp=1,pp=1");
  const auto refusal = [](const std::string& text, int world) -> std::string {
    try {
      ParseLayout(text).Fit(world);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal("tp=3", 8),
            "layout tp=3,cp=1,pp=1 does not divide the job's 8 ranks into data-parallel "
            "replicas: tp x cp x pp = 3 must divide them");
  EXPECT_EQ(refusal("tp=2,dp=2", 8),
            "layout tp=2,dp=2,cp=1,pp=1 holds 4 ranks, the job 8: the sizes' product must be the "
            "number of ranks");
}

TEST(Layout, WhatIsNotALayoutIsNamed) {
  const auto message = [](const std::string& text) -> std::string {
    try {
      ParseLayout(text);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message("tp=2,ep=2").find("'ep' is not a dimension (tp, cp, dp or pp)"),
            std::string::npos);
  EXPECT_NE(message("tp=0").find("tp: '0' is not a size"), std::string::npos);
  EXPECT_NE(message("dp=-1").find("dp: '-1' is not a size"), std::string::npos);
  EXPECT_NE(message("dp").find("dp: '' is not a size"), std::string::npos);
  EXPECT_NE(message("dp=2,dp=2").find("dp is given twice"), std::string::npos);
  EXPECT_NE(message("").find("'' is not a dimension"), std::string::npos);
  EXPECT_EQ(ParseReplicaFeed("read"), ReplicaFeed::kReadEach);
  EXPECT_THROW(ParseReplicaFeed("scatter"), ConfigError);
}

// docs/loader.md: seq_len 8, cp 2: the inputs cut into 4 chunks of 2; rank 0 takes chunks 0 and
// 3, rank 1 chunks 1 and 2.
TEST(ContextSplit, EachRankTakesAChunkAndItsMirror) {
  Batch whole;
  whole.rows = 2;
  whole.row_tokens = 9;
  for (int64_t t = 0; t < 18; ++t) whole.tokens.push_back(100 + t);
  for (int64_t t = 0; t < 16; ++t) {
    whole.boundaries.position_ids.push_back(t);
    whole.boundaries.segment_ids.push_back(static_cast<int32_t>(t / 3));
    whole.boundaries.loss_mask.push_back(t % 5 == 0 ? 0.0f : 1.0f);
  }
  whole.boundaries.cu_seqlens = {0, 8, 16};
  whole.boundaries.max_seqlen = 8;
  Batch rank0 = whole, rank1 = whole;
  SplitForContext(2, 0, &rank0);
  SplitForContext(2, 1, &rank1);
  EXPECT_EQ(rank0.inputs, (std::vector<int64_t>{100, 101, 106, 107, 109, 110, 115, 116}));
  EXPECT_EQ(rank0.labels, (std::vector<int64_t>{101, 102, 107, 108, 110, 111, 116, 117}));
  EXPECT_EQ(rank1.inputs, (std::vector<int64_t>{102, 103, 104, 105, 111, 112, 113, 114}));
  EXPECT_EQ(rank1.labels, (std::vector<int64_t>{103, 104, 105, 106, 112, 113, 114, 115}));
  EXPECT_EQ(rank0.boundaries.position_ids, (std::vector<int64_t>{0, 1, 6, 7, 8, 9, 14, 15}));
  EXPECT_EQ(rank1.boundaries.segment_ids, (std::vector<int32_t>{0, 1, 1, 1, 3, 3, 4, 4}));
  EXPECT_EQ(rank1.boundaries.loss_mask, (std::vector<float>{1, 1, 1, 0, 0, 1, 1, 1}));
  EXPECT_EQ(rank0.boundaries.cu_seqlens, whole.boundaries.cu_seqlens);
  EXPECT_EQ(rank0.tokens, whole.tokens);
  Batch alone = whole;
  SplitForContext(1, 0, &alone);
  EXPECT_TRUE(alone.inputs.empty());
  EXPECT_EQ(alone.boundaries.position_ids, whole.boundaries.position_ids);
}

}  // namespace
}  // namespace stoker

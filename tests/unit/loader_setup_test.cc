// What the Loader settles before it streams that depends on the node: a rank's reads in flight;
// and what the memory check counts of the document boundary fields.
#include "loader/loader_setup.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(RankIoDepth, AutoSharesTheNodesDepthAmongItsRanksDownToTheLeast) {
  LoaderConfig config;
  ASSERT_EQ(config.io_depth, 0u) << "the default is auto";
  EXPECT_EQ(RankIoDepth(config, 1), LoaderConfig::kNodeIoDepth);
  EXPECT_EQ(RankIoDepth(config, 2), LoaderConfig::kNodeIoDepth / 2);
  EXPECT_EQ(RankIoDepth(config, 3), LoaderConfig::kNodeIoDepth / 3);
  EXPECT_EQ(RankIoDepth(config, 8), LoaderConfig::kMinRankIoDepth);
  EXPECT_EQ(RankIoDepth(config, 64), LoaderConfig::kMinRankIoDepth);
  EXPECT_EQ(RankIoDepth(config, 0), LoaderConfig::kNodeIoDepth);
}

TEST(RankIoDepth, ANumberIsKeptWhateverTheNode) {
  LoaderConfig config;
  config.io_depth = 5;
  EXPECT_EQ(RankIoDepth(config, 1), 5u);
  EXPECT_EQ(RankIoDepth(config, 64), 5u);
}

TEST(BatchesBeingRead, AtMostTheReadsARankMayHaveInFlight) {
  LoaderConfig config;
  config.read_ahead_bytes = uint64_t{1} << 40;  // far more batches than reads
  EXPECT_EQ(BatchesBeingRead(config), LoaderConfig::kNodeIoDepth) << "auto: a rank alone on a node";
  config.io_depth = 3;
  EXPECT_EQ(BatchesBeingRead(config), 3u);
  config.read_ahead_bytes = 0;
  EXPECT_EQ(BatchesBeingRead(config), 1u);
}

TEST(LoaderConfig, BoundaryFieldsCountInTheMemoryCheck) {
  LoaderConfig config;
  config.data = "corpus";
  config.max_memory_bytes = 50 << 20;  // the defaults hold 40.5 MiB
  EXPECT_TRUE(config.Problems().empty());
  config.boundaries = BoundaryFields::All();
  const std::vector<std::string> problems = config.Problems();
  ASSERT_EQ(problems.size(), 1u);
  // 20 bytes per input token of 8 x 4096, and the end of cu_seqlens, for 36 batches.
  EXPECT_NE(problems[0].find("the loader would hold 63.0 MiB per rank"), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[0].find("the boundary fields of 36 of them (640.0 KiB each)"),
            std::string::npos)
      << problems[0];
}

}  // namespace
}  // namespace stoker

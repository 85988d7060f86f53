// The checkpoint file's codec: a rank's state round trips byte for byte, every flipped bit or cut
// is refused naming the file, and identity differences are named one per line.
#include "core/checkpoint_codec.h"

#include <gtest/gtest.h>

#include "common/fake_corpus.h"
#include "core/row_planner.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using testing::ConfigFor;
using testing::FakeCorpus;

constexpr uint64_t kShards = 61;

// Rank 1 of 2 after `rows` rows, weights 3:1: cursors moved, documents cut, counters counted.
RankState StateAfterRows(const FakeCorpus& corpus, int rows) {
  const PlannerConfig config = ConfigFor(corpus, {3, 1}, kShards, 2, 1);
  RowPlanner planner(config, InitialRankState(2, kShards, 2, 1), corpus.Locator());
  std::vector<Segment> row;
  for (int i = 0; i < rows; ++i) planner.NextRow(&row);
  planner.EndBatch();
  return planner.state();
}

RankCheckpoint SomeCheckpoint() {
  const FakeCorpus corpus = FakeCorpus::Make({500, 200}, 13);
  RankCheckpoint c;
  c.identity = {.corpus_fingerprint = "0123456789abcdef0123456789abcdef",
                .seed = 5,
                .logical_shards = kShards,
                .seq_len = 96,
                .eos_id = 1000,
                .bos_id = 1001,
                .datasets = corpus.names};
  c.weights = {0.75, 0.25};
  c.world = 2;
  c.rank = 1;
  c.state = StateAfterRows(corpus, 17);
  return c;
}

TEST(CheckpointCodec, RoundTrips) {
  const RankCheckpoint c = SomeCheckpoint();
  const std::string bytes = EncodeCheckpoint(c);
  EXPECT_EQ(DecodeCheckpoint(bytes, "f"), c);
  EXPECT_LT(bytes.size(), 400u);  // cursors, not tokens: a few bytes per logical shard
}

TEST(CheckpointCodec, EveryFlippedBitOrCutIsRefused) {
  const std::string bytes = EncodeCheckpoint(SomeCheckpoint());
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      EXPECT_THROW(DecodeCheckpoint(bad, "rank-1.ckpt"), DataError) << "byte " << i;
    }
  }
  for (size_t n : {size_t{0}, size_t{7}, size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    try {
      DecodeCheckpoint(bytes.substr(0, n), "rank-1.ckpt");
      ADD_FAILURE() << "a file cut to " << n << " bytes was accepted";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("rank-1.ckpt"), std::string::npos) << e.what();
    }
  }
}

TEST(CheckpointCodec, IdentityDifferencesNameWhatDiffers) {
  const OrderIdentity a = SomeCheckpoint().identity;
  OrderIdentity b = a;
  EXPECT_TRUE(IdentityDifferences(a, b).empty());
  b.seed = 6;
  b.bos_id.reset();
  const auto lines = IdentityDifferences(a, b);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "seed: checkpoint 5, now 6");
  EXPECT_EQ(lines[1], "bos_id: checkpoint 1001, now none");
}

}  // namespace
}  // namespace stoker

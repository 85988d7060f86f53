// The logical shards' walk as a lane's source of walked units (packing/shard_walk.h): a lane
// reading one walked dataset starts its non-empty documents in the walk's order, the one
// RowPlanner follows; Peek moves nothing, so a state saved between Peek and Advance goes on the
// same.
#include "packing/shard_walk.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/fake_corpus.h"
#include "mixing/lane.h"
#include "mixing/mix_clock.h"
#include "order/order.h"

namespace stoker {
namespace {

using testing::ConfigFor;
using testing::FakeCorpus;

// The non-empty documents of `dataset` in the walk's order, from `state` on.
std::vector<uint64_t> WalkOrder(const PlannerConfig& config, const FakeCorpus& corpus,
                                RankState state, uint32_t dataset, size_t count) {
  const ShardWalk walk(config, state);
  ShardWalk::Position position = walk.Start(state);
  std::vector<uint64_t> docs;
  while (docs.size() < count) {
    const uint64_t shard = walk.NextShard(state, position, dataset);
    const uint64_t doc = walk.DocumentAt(state, shard, dataset);
    if (corpus.lengths[dataset][doc] > 0) docs.push_back(doc);
    walk.Advance(state, position, shard, dataset);
  }
  return docs;
}

TEST(WalkedUnits, ALaneStartsAWalkedDatasetsDocumentsInTheWalksOrder) {
  const FakeCorpus corpus = FakeCorpus::Make({900}, 3);
  const DocLocator locate = corpus.Locator();
  for (uint64_t world : {1, 3}) {
    for (uint64_t rank = 0; rank < world; ++rank) {
      const PlannerConfig config = ConfigFor(corpus, {1}, 16, world, rank);
      const RankState start = InitialRankState(1, 16, world, rank);
      const std::vector<uint64_t> expected = WalkOrder(config, corpus, start, 0, 800 / world);
      RankState state = start;
      const ShardWalk walk(config, state);
      ShardWalk::Position position = walk.Start(state);
      WalkedUnits units(&config, &walk, &state, &position, &locate, /*extra=*/1);
      const MixClock clock(config.schedule, world * 97);
      Lane lane(static_cast<uint32_t>(rank), static_cast<uint32_t>(world),
                {{.walked = true, .tokens = 900 * 51, .key = 1, .tie = 0}}, clock,
                {.dealers = {FirstDealerState(static_cast<uint32_t>(world))}}, &units);
      std::vector<uint64_t> started;
      for (uint64_t step = 0; started.size() < expected.size(); ++step) {
        for (uint64_t room = 97; room > 0;) {
          const LanePiece piece = lane.Take(step, room);
          if (piece.first == 0) {
            started.push_back(piece.unit.dealt.unit);
            EXPECT_EQ(piece.unit.dealt.size, corpus.lengths[0][piece.unit.dealt.unit] + 1);
          }
          room -= piece.count;
        }
      }
      started.resize(expected.size());
      EXPECT_EQ(started, expected) << "rank " << rank << " of " << world;
    }
  }
}

TEST(WalkedUnits, PeekMovesNothing) {
  const FakeCorpus corpus = FakeCorpus::Make({300}, 4);
  const DocLocator locate = corpus.Locator();
  const PlannerConfig config = ConfigFor(corpus, {1}, 8, 2, 1);
  RankState state = InitialRankState(1, 8, 2, 1);
  const ShardWalk walk(config, state);
  ShardWalk::Position position = walk.Start(state);
  WalkedUnits units(&config, &walk, &state, &position, &locate, /*extra=*/2);
  for (int i = 0; i < 400; ++i) {
    const RankState before = state;
    const Dealt peeked = units.Peek(0);
    EXPECT_EQ(state, before);
    EXPECT_EQ(units.Peek(0), peeked);
    const uint64_t length = corpus.lengths[0][peeked.unit];
    EXPECT_EQ(peeked.size, length == 0 ? 0 : length + 2);
    units.Advance(0);
    EXPECT_NE(state, before);
  }
}

// One logical shard of more than 2^32 documents (a 10^11-document dataset on few logical shards):
// the walk reads the document at a cursor beyond 32 bits, moves it on, and at the slice's end
// wraps the shard into its next epoch.
TEST(ShardWalk, CursorsBeyond32BitsMoveOnAndWrap) {
  constexpr uint64_t kDocs = 3 * (uint64_t{1} << 32) + 5;
  constexpr uint64_t kAt = (uint64_t{1} << 32) + 9;
  PlannerConfig config{.seed = 7, .logical_shards = 1, .world = 1, .rank = 0, .row_tokens = 97};
  config.datasets.push_back({.name = "web", .docs = kDocs, .tokens = 4 * kDocs});
  config.schedule = MixSchedule::Constant(MixSchedule::Normalized({1}));
  RankState state = InitialRankState(1, 1, 1, 0);
  const ShardWalk walk(config, state);
  EXPECT_EQ(walk.rank_docs(0), kDocs);
  const DatasetOrder order(7, "web", kDocs, 1);
  for (const uint64_t at : {kAt, kDocs - 1}) {
    state.cursor(0, 0).position = at;
    ShardWalk::Position position = walk.Start(state);
    EXPECT_EQ(walk.NextShard(state, position, 0), 0u);
    EXPECT_EQ(walk.DocumentAt(state, 0, 0), order.Epoch(0).At(at));
    walk.Advance(state, position, 0, 0);
    if (at == kAt) {
      EXPECT_EQ(state.cursor(0, 0), (ShardCursor{.epoch = 0, .position = kAt + 1}));
    } else {
      EXPECT_EQ(state.cursor(0, 0), (ShardCursor{.epoch = 1, .position = 0}));
      EXPECT_EQ(position.least_epoch[0], 1u);
    }
  }
}

}  // namespace
}  // namespace stoker

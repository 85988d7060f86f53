// The loader's state on one rank and the deltas that batches carry (state/loader_state.h).
#include "state/loader_state.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace stoker {
namespace {

TEST(LoaderState, InitialStateOwnsTheRanksShardsAtTheirStart) {
  const RankState s = InitialRankState(3, 10, 4, 1);
  EXPECT_EQ(s.shards, OwnedLogicalShards(10, 4, 1));
  EXPECT_EQ(s.cursors.size(), s.shards.size() * 3);
  EXPECT_EQ(s.lane.started, std::vector<uint64_t>(3, 0));
  EXPECT_EQ(s.lane.dealers.size(), 3u);  // every dataset walked
  EXPECT_EQ(s.step_tokens, 0u);          // no clock yet
  EXPECT_EQ(s.interleave.size(), 3u);
  EXPECT_EQ(s.step, 0u);
  EXPECT_TRUE(s.unfinished.empty());
  for (const ShardCursor& c : s.cursors) EXPECT_EQ(c, ShardCursor{});
}

TEST(LoaderState, CursorsAreAddressedByShardAndDataset) {
  RankState s = InitialRankState(2, 8, 2, 1);  // shards 4..7
  s.cursor(6, 1).position = 9;
  EXPECT_EQ(s.cursors[(6 - 4) * 2 + 1].position, 9u);
  EXPECT_EQ(s.cursor(6, 0).position, 0u);
}

TEST(LoaderState, ADeltaSetsWhatItTouchedAndThePerRankParts) {
  RankState s = InitialRankState(2, 8, 1, 0);
  s.cursor(3, 0) = {1, 5, 0};
  StateDelta delta;
  delta.cursors = {{2 * 2 + 1, ShardCursor{0, 4, 17}}};
  delta.step = 12;
  delta.lane.started = {100, 50};
  delta.lane.open = {{.unit = {.dataset = 1, .dealt = {.position = 2, .size = 40}}, .done = 17}};
  delta.interleave = {{1, 2}, {0, 3}};
  delta.unfinished = {{1, 2}};
  RankState expected = s;
  expected.cursor(2, 1) = {0, 4, 17};
  expected.step = 12;
  expected.lane.started = {100, 50};
  expected.lane.open = delta.lane.open;
  expected.lane.dealers.clear();
  expected.lane.earlier.clear();
  expected.interleave = {{1, 2}, {0, 3}};
  expected.unfinished = {{1, 2}};
  ApplyDelta(delta, &s);
  EXPECT_EQ(s, expected);
  EXPECT_EQ(s.cursor(3, 0), (ShardCursor{1, 5, 0}));  // untouched cursors stay
}

}  // namespace
}  // namespace stoker

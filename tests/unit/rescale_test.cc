// Rescaling in simulated worlds: ranks stream part of an epoch, their states are split and
// reassembled for another world size, the new ranks stream on, and every framed token of the
// epoch must have been delivered exactly once over all the worlds.
#include "core/rescale.h"

#include <gtest/gtest.h>

#include "common/fake_corpus.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using testing::AllPastEpoch;
using testing::ConfigFor;
using testing::EpochZeroCounter;
using testing::FakeCorpus;

constexpr uint64_t kShards = 61;  // a prime: no world size divides it

// Streams `rows` rows on every rank of the world that `states` describe, then returns their
// states (rows < 0: until every rank is past epoch 0).
std::vector<RankState> Stream(const FakeCorpus& corpus, const std::vector<double>& weights,
                              std::vector<RankState> states, int rows,
                              EpochZeroCounter* counter) {
  const uint64_t world = states.size();
  for (uint64_t rank = 0; rank < world; ++rank) {
    const PlannerConfig config = ConfigFor(corpus, weights, kShards, world, rank);
    RowPlanner planner(config, states[rank], corpus.Locator());
    std::vector<Segment> row;
    for (int i = 0; rows < 0 ? !AllPastEpoch(planner.state(), config, 0) : i < rows; ++i) {
      if (i > 1000000) {
        ADD_FAILURE() << "rank " << rank << " never finished epoch 0";
        break;
      }
      planner.NextRow(&row);
      counter->Add(row);
    }
    planner.EndBatch();
    states[rank] = planner.state();
  }
  return states;
}

std::vector<RankState> Rescale(const std::vector<RankState>& old, uint64_t new_world,
                               uint64_t datasets) {
  std::vector<std::vector<RescalePart>> parts(new_world);
  for (uint64_t r = 0; r < old.size(); ++r) {
    for (const RescalePart& part : SplitState(old[r], r, kShards, new_world)) {
      parts[part.new_rank].push_back(DecodeRescalePart(EncodeRescalePart(part)));  // as over MPI
    }
  }
  std::vector<RankState> out;
  for (uint64_t n = 0; n < new_world; ++n) {
    out.push_back(AssembleState(parts[n], datasets, kShards, new_world, n));
  }
  return out;
}

std::vector<RankState> Fresh(uint64_t world, uint64_t datasets) {
  std::vector<RankState> states;
  for (uint64_t r = 0; r < world; ++r) states.push_back(InitialRankState(datasets, kShards, world, r));
  return states;
}

void ExpectExactlyOnceAcross(const std::vector<uint64_t>& worlds, const std::vector<int>& rows) {
  const FakeCorpus corpus = FakeCorpus::Make({1500, 400, 90}, 11, 40);
  const std::vector<double> weights = {3, 2, 1};
  EpochZeroCounter counter(corpus);
  std::vector<RankState> states = Fresh(worlds[0], 3);
  for (size_t i = 0; i < worlds.size(); ++i) {
    if (i > 0) {
      uint64_t before = 0, after = 0;
      for (const auto& s : states) for (uint64_t v : s.delivered) before += v;
      states = Rescale(states, worlds[i], 3);
      for (const auto& s : states) for (uint64_t v : s.delivered) after += v;
      EXPECT_EQ(before, after) << "mixing counters must be kept";
      for (const auto& s : states) EXPECT_EQ(s.generation, i);
    }
    states = Stream(corpus, weights, states, i + 1 < worlds.size() ? rows[i] : -1, &counter);
  }
  counter.ExpectExactlyOnce(weights);
}

TEST(Rescale, ExactlyOnceAcrossWorldSizes) {
  ExpectExactlyOnceAcross({4, 1}, {40});
  ExpectExactlyOnceAcross({4, 3}, {33});
  ExpectExactlyOnceAcross({2, 5}, {57});
  ExpectExactlyOnceAcross({3, 7}, {21});
  ExpectExactlyOnceAcross({4, 3, 5, 2}, {13, 17, 11});
  ExpectExactlyOnceAcross({1, 61, 1}, {100, 3});  // every rank down to a single shard and back
}

TEST(Rescale, SameWorldKeepsEveryShardAndCounter) {
  const FakeCorpus corpus = FakeCorpus::Make({700, 300}, 12);
  EpochZeroCounter counter(corpus);
  std::vector<RankState> states = Stream(corpus, {1, 1}, Fresh(3, 2), 25, &counter);
  const std::vector<RankState> again = Rescale(states, 3, 2);
  for (uint64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(again[r].cursors, states[r].cursors);
    EXPECT_EQ(again[r].unfinished, states[r].unfinished);
    EXPECT_EQ(again[r].step, states[r].step);
  }
}

TEST(Rescale, MissingOrDuplicatedShardsAreRefused) {
  const std::vector<RankState> states = Fresh(2, 1);
  auto a = SplitState(states[0], 0, kShards, 1);
  auto b = SplitState(states[1], 1, kShards, 1);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_THROW(AssembleState({a[0]}, 1, kShards, 1, 0), DataError);          // rank 1 missing
  EXPECT_THROW(AssembleState({a[0], a[0], b[0]}, 1, kShards, 1, 0), DataError);  // twice
  b[0].step = 99;
  EXPECT_THROW(AssembleState({a[0], b[0]}, 1, kShards, 1, 0), DataError);   // steps differ
}

}  // namespace
}  // namespace stoker

// Rescaling in simulated worlds: ranks stream part of an epoch, their states are split and
// reassembled for another world size, the new ranks stream on, and every framed token of the
// epoch must have been delivered exactly once over all the worlds.
#include "state/rescale.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "common/fake_corpus.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using testing::AllPastEpoch;
using testing::ConfigFor;
using testing::EpochZeroCounter;
using testing::FakeCorpus;

constexpr uint64_t kShards = 61;  // a prime: no world size divides it

// Streams `rows` rows on every rank of the world that `states` describe, in batches of 4 rows
// at the weights of `schedule`, then returns their states (rows < 0: until every rank is past
// epoch 0).
std::vector<RankState> Stream(const FakeCorpus& corpus, const MixSchedule& schedule,
                              std::vector<RankState> states, int rows, EpochZeroCounter* counter,
                              bool deal_last = false) {
  const uint64_t world = states.size();
  auto sizes = std::make_shared<std::vector<uint64_t>>();
  for (uint64_t n : corpus.lengths.back()) sizes->push_back(n == 0 ? 0 : n + 1);
  for (uint64_t rank = 0; rank < world; ++rank) {
    PlannerConfig config =
        ConfigFor(corpus, std::vector<double>(corpus.names.size(), 1), kShards, world, rank);
    config.schedule = schedule;
    config.rows = 4;
    if (deal_last) config.datasets.back().sizes = sizes;
    RowPlanner planner(config, states[rank], corpus.Locator());
    std::vector<Segment> row;
    for (int i = 0; rows < 0 ? !AllPastEpoch(planner.state(), config, 0) : i < rows; ++i) {
      if (i > 1000000) {
        ADD_FAILURE() << "rank " << rank << " never finished epoch 0";
        break;
      }
      planner.NextRow(&row);
      counter->Add(row);
      if (i % 4 == 3) planner.EndBatch();
    }
    planner.EndBatch();
    states[rank] = planner.state();
  }
  return states;
}

MixSchedule Constant(const std::vector<double>& weights) {
  return MixSchedule::Constant(MixSchedule::Normalized(weights));
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
  for (uint64_t r = 0; r < world; ++r)
    states.push_back(InitialRankState(datasets, kShards, world, r));
  return states;
}

// With `deal_last`, the last dataset (90 documents) is dealt to the ranks (mixing/lane.h): every
// new rank deals its stream again from the old ranks' positions.
void ExpectExactlyOnceAcross(const std::vector<uint64_t>& worlds, const std::vector<int>& rows,
                             const MixSchedule& schedule = Constant({3, 2, 1}),
                             bool deal_last = false) {
  const FakeCorpus corpus = FakeCorpus::Make({1500, 400, 90}, 11, 40);
  EpochZeroCounter counter(corpus);
  std::vector<RankState> states = Fresh(worlds[0], 3);
  for (size_t i = 0; i < worlds.size(); ++i) {
    if (i > 0) {
      std::vector<uint64_t> before(3), after(3);
      size_t open_before = 0, open_after = 0;
      for (const auto& s : states) {
        for (int d = 0; d < 3; ++d) before[d] += s.lane.started[d];
        open_before += s.lane.open.size();
      }
      const ClockBase clock = states.front().clock;
      states = Rescale(states, worlds[i], 3);
      for (const auto& s : states) {
        for (int d = 0; d < 3; ++d) after[d] += s.lane.started[d];
        open_after += s.lane.open.size();
      }
      EXPECT_EQ(before, after) << "the started tokens are split, each total kept";
      EXPECT_EQ(open_before, open_after) << "every open document goes on somewhere";
      for (const auto& s : states) {
        EXPECT_EQ(s.generation, i);
        EXPECT_EQ(s.clock, clock);
      }
    }
    states =
        Stream(corpus, schedule, states, i + 1 < worlds.size() ? rows[i] : -1, &counter, deal_last);
  }
  counter.ExpectExactlyOnce({1, 1, 1});  // every dataset is read by the end of each schedule
}

TEST(Rescale, ExactlyOnceAcrossWorldSizes) {
  ExpectExactlyOnceAcross({4, 1}, {40});
  ExpectExactlyOnceAcross({4, 3}, {33});
  ExpectExactlyOnceAcross({2, 5}, {57});
  ExpectExactlyOnceAcross({3, 7}, {21});
  ExpectExactlyOnceAcross({4, 3, 5, 2}, {13, 17, 11});
  ExpectExactlyOnceAcross({1, 61, 1}, {100, 3});  // every rank down to a single shard and back
}

TEST(Rescale, ADealtDatasetExactlyOnceAcrossWorldSizes) {
  ExpectExactlyOnceAcross({4, 1}, {40}, Constant({3, 2, 1}), true);
  ExpectExactlyOnceAcross({4, 3}, {33}, Constant({3, 2, 1}), true);
  ExpectExactlyOnceAcross({2, 5}, {57}, Constant({3, 2, 1}), true);
  ExpectExactlyOnceAcross({3, 7}, {21}, Constant({3, 2, 1}), true);
  ExpectExactlyOnceAcross({4, 3, 7, 2}, {13, 17, 11}, Constant({1, 1, 4}), true);
  ExpectExactlyOnceAcross({1, 61, 1}, {100, 3}, Constant({3, 2, 1}), true);
}

// Jumps, a dataset left out for a while and ramps, rescaled before, during and after them.
// A state still to be dealt again (rescaled, then saved before its first batch) rescaled again:
// each new rank gets the old lanes' positions and a state to deal from once, from the old rank
// that owns its first logical shard, also where the world before was the larger (4 -> 2 -> 4:
// there is no old rank k mod 4 to send new ranks 2 and 3 a state, as there was to be).
TEST(Rescale, ADealtDatasetStillToBeDealtAgainGoesOnceToEachNewRank) {
  ExpectExactlyOnceAcross({4, 2, 4}, {13, 0}, Constant({3, 2, 1}), true);
  ExpectExactlyOnceAcross({5, 3, 7, 2}, {13, 0, 0}, Constant({1, 1, 4}), true);
  const FakeCorpus corpus = FakeCorpus::Make({1500, 400, 90}, 11, 40);
  EpochZeroCounter counter(corpus);
  const std::vector<RankState> pending =
      Rescale(Stream(corpus, Constant({3, 2, 1}), Fresh(6, 3), 13, &counter, true), 3, 3);
  ASSERT_EQ(pending[0].redeal.size(), 3u);
  ASSERT_EQ(pending[0].redeal[2].size(), 6u);
  uint64_t pairs = 0, parts = 0, from = 0;
  for (uint64_t r = 0; r < 3; ++r) {
    for (const RescalePart& part : SplitState(pending[r], r, kShards, 40)) {
      ++parts;
      pairs += part.positions[2].size();
      from += part.from[2].has_value();
    }
  }
  EXPECT_EQ(pairs, 40u * 6) << "the 6 old lanes' positions once to each of 40 new ranks";
  EXPECT_EQ(from, 40u);
  EXPECT_LE(parts, 40u + 3) << "no part that carries nothing";
}

TEST(Rescale, ExactlyOnceAcrossWorldSizesWhileTheWeightsChange) {
  const MixSchedule schedule({{.step = 0, .weights = {0.5, 0.3, 0.2}},
                              {.step = 5, .weights = {0.0, 0.2, 0.8}},
                              {.step = 9, .ramp = true, .weights = {0.7, 0.0, 0.3}},
                              {.step = 20, .ramp = true, .weights = {0.2, 0.4, 0.4}}});
  ExpectExactlyOnceAcross({4, 1}, {40}, schedule);
  ExpectExactlyOnceAcross({4, 3, 5, 2}, {13, 17, 11}, schedule);
  ExpectExactlyOnceAcross({2, 5, 3, 1}, {21, 30, 45}, schedule);
  ExpectExactlyOnceAcross({1, 61, 1}, {100, 3}, schedule);
}

// An open document goes with its logical shard, to the lane that owns it, in (old rank, old
// order) order (the lane orders them by its clock); the clock goes to every part as it was.
TEST(Rescale, OpenDocumentsGoWithTheirShards) {
  RankState old = InitialRankState(2, kShards, 1, 0);
  old.clock = {.step = 7, .earned = {10.5, 20.25}};
  old.step_tokens = 640;
  old.step = 9;
  const auto open = [](uint32_t dataset, uint64_t shard, double due) {
    return OpenUnit{.unit = {.dataset = dataset,
                             .dealt = {.position = shard, .unit = shard * 3, .size = 50},
                             .due = due},
                    .done = 20};
  };
  old.lane.open = {open(0, 60, 8.5), open(1, 2, 9.0), open(1, 59, 9.5)};
  const std::vector<RescalePart> parts = SplitState(old, 0, kShards, 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(DecodeRescalePart(EncodeRescalePart(parts[1])), parts[1]);
  const std::vector<RankState> two = Rescale({old}, 2, 2);
  ASSERT_EQ(two[0].lane.open.size(), 1u);
  EXPECT_EQ(two[0].lane.open[0].unit.dealt.position, 2u);
  ASSERT_EQ(two[1].lane.open.size(), 2u);
  EXPECT_EQ(two[1].lane.open[0].unit.dealt.position, 60u);
  EXPECT_EQ(two[1].lane.open[1].unit.dealt.position, 59u);
  EXPECT_EQ(two[1].lane.open[1].unit.dealt.lane, 1u);  // now lane 1's
  EXPECT_EQ(two[1].lane.open[1].done, 20u);
  for (const RankState& s : two) {
    EXPECT_EQ(s.clock, old.clock);
    EXPECT_EQ(s.step_tokens, 640u);
  }
  std::vector<RescalePart> clash = SplitState(two[1], 1, kShards, 1);
  clash[0].step_tokens = 320;
  std::vector<RescalePart> all = SplitState(two[0], 0, kShards, 1);
  all.push_back(clash[0]);
  EXPECT_THROW(AssembleState(all, 2, kShards, 1, 0), DataError);  // clocks differ
}

TEST(Rescale, SameWorldKeepsEveryShardAndCounter) {
  const FakeCorpus corpus = FakeCorpus::Make({700, 300}, 12);
  EpochZeroCounter counter(corpus);
  std::vector<RankState> states = Stream(corpus, Constant({1, 1}), Fresh(3, 2), 25, &counter);
  const std::vector<RankState> again = Rescale(states, 3, 2);
  for (uint64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(again[r].cursors, states[r].cursors);
    EXPECT_EQ(again[r].unfinished, states[r].unfinished);
    EXPECT_EQ(again[r].lane.open, states[r].lane.open);
    EXPECT_EQ(again[r].lane.started, states[r].lane.started);
    EXPECT_EQ(again[r].step, states[r].step);
  }
}

TEST(Rescale, MissingOrDuplicatedShardsAreRefused) {
  const std::vector<RankState> states = Fresh(2, 1);
  auto a = SplitState(states[0], 0, kShards, 1);
  auto b = SplitState(states[1], 1, kShards, 1);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_THROW(AssembleState({a[0]}, 1, kShards, 1, 0), DataError);              // rank 1 missing
  EXPECT_THROW(AssembleState({a[0], a[0], b[0]}, 1, kShards, 1, 0), DataError);  // twice
  b[0].step = 99;
  EXPECT_THROW(AssembleState({a[0], b[0]}, 1, kShards, 1, 0), DataError);  // steps differ
}

}  // namespace
}  // namespace stoker

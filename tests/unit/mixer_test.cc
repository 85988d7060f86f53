// The mixer's choice of the next dataset (mixing/mixer.h) and the schedule of its weights
// (mixing/mix_schedule.h).
#include "mixing/mixer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mixing/mix_schedule.h"

namespace stoker {
namespace {

TEST(Mixer, WeightsAreNormalizedOverTheDatasetsRead) {
  const std::vector<double> weights = {3, 1, 0, 4};
  const Mixer mixer(weights, {true, true, true, false});
  EXPECT_DOUBLE_EQ(mixer.shares()[0], 0.75);
  EXPECT_DOUBLE_EQ(mixer.shares()[1], 0.25);
  EXPECT_DOUBLE_EQ(mixer.shares()[2], 0.0);
  EXPECT_DOUBLE_EQ(mixer.shares()[3], 0.0);  // no documents on this rank
  EXPECT_TRUE(mixer.reads(0));
  EXPECT_FALSE(mixer.reads(2));
  EXPECT_FALSE(mixer.reads(3));
}

TEST(Mixer, PicksTheLargestDeficitAndTiesGoLow) {
  const std::vector<double> weights = {1, 1};
  const Mixer mixer(weights, {true, true});
  EXPECT_EQ(mixer.Pick(std::vector<double>{0, 0}), 0u);  // a tie: the lower index
  EXPECT_EQ(mixer.Pick(std::vector<double>{-5, 5}), 1u);
  EXPECT_EQ(mixer.Pick(std::vector<double>{10, -10}), 0u);
  std::vector<double> deficit = {0, 0};
  mixer.Count(0, 10, deficit);  // each owed 5 of the 10; dataset 0 delivered them all
  EXPECT_DOUBLE_EQ(deficit[0], -5);
  EXPECT_DOUBLE_EQ(deficit[1], 5);
  EXPECT_EQ(mixer.Pick(deficit), 1u);
}

TEST(Mixer, WeightZeroAndDatasetsWithoutDocumentsAreNeverPicked) {
  const std::vector<double> weights = {0, 1, 1};
  const std::vector<double> deficit = {100, -50, -40};
  // Dataset 0 is owed the most, but weight 0 is never read.
  EXPECT_EQ(Mixer(weights, {true, true, true}).Pick(deficit), 2u);
  EXPECT_EQ(Mixer(weights, {true, true, false}).Pick(deficit), 1u);
  EXPECT_EQ(Mixer(weights, {true, false, false}).Pick(deficit), std::nullopt);
}

// Documents of 1..997 tokens, fed to a mixer that follows `schedule` with `docs_per_step`
// documents a step; `check` sees, after each document, the tokens each dataset delivered and
// was owed since the last jump or change of the datasets read (the weights of each document's
// step times its length).
template <typename Check>
void Feed(const MixSchedule& schedule, uint64_t steps, uint64_t docs_per_step, Check check) {
  const size_t n = schedule.datasets();
  std::vector<double> deficit(n, 0), delivered(n, 0), owed(n, 0);
  const std::vector<bool> all(n, true);
  uint64_t i = 0;
  std::vector<double> before = schedule.WeightsAt(0);
  for (uint64_t step = 0; step < steps; ++step) {
    const std::vector<double> weights = schedule.WeightsAt(step);
    bool read_changed = false;
    for (size_t d = 0; d < n; ++d)
      read_changed = read_changed || (before[d] > 0) != (weights[d] > 0);
    before = weights;
    if (schedule.JumpsAt(step) || read_changed) {
      std::fill(deficit.begin(), deficit.end(), 0.0);
      std::fill(delivered.begin(), delivered.end(), 0.0);
      std::fill(owed.begin(), owed.end(), 0.0);
    }
    const Mixer mixer(weights, all);
    for (uint64_t k = 0; k < docs_per_step; ++k, ++i) {
      const uint32_t d = mixer.Pick(deficit).value();
      const uint64_t length = 1 + (i * 7919 + d * 104729) % 997;
      mixer.Count(d, length, deficit);
      delivered[d] += static_cast<double>(length);
      for (size_t e = 0; e < n; ++e) owed[e] += weights[e] * static_cast<double>(length);
      check(step, delivered, owed);
    }
  }
}

// No dataset is ever more than one document (997 tokens) ahead of what it is owed, nor more than
// one document of each other dataset behind.
void ExpectWithinOneDocument(const MixSchedule& schedule, uint64_t steps) {
  const double behind = 997.0 * static_cast<double>(schedule.datasets() - 1);
  Feed(schedule, steps, 5, [&](uint64_t step, const auto& delivered, const auto& owed) {
    for (size_t d = 0; d < delivered.size(); ++d) {
      ASSERT_LE(delivered[d] - owed[d], 997.0) << "dataset " << d << " at step " << step;
      ASSERT_LE(owed[d] - delivered[d], behind) << "dataset " << d << " at step " << step;
    }
  });
}

TEST(Mixer, SharesStayWithinOneDocumentOfTheirWeights) {
  ExpectWithinOneDocument(MixSchedule::Constant({0.5, 0.3, 0.2}), 4000);
}

TEST(Mixer, AfterAJumpTheNewWeightsRuleAtOnce) {
  const MixSchedule schedule({{.step = 0, .weights = {0.9, 0.1, 0.0}},
                              {.step = 1000, .weights = {0.1, 0.2, 0.7}},
                              {.step = 2000, .weights = {0.0, 0.5, 0.5}}});
  ExpectWithinOneDocument(schedule, 3000);
}

TEST(Mixer, AlongARampTheTokensFollowTheWeightsOfTheirSteps) {
  const MixSchedule schedule({{.step = 0, .weights = {0.9, 0.1, 0.0}},
                              {.step = 500, .ramp = false, .weights = {0.8, 0.2, 0.0}},
                              {.step = 2500, .ramp = true, .weights = {0.1, 0.3, 0.6}},
                              {.step = 3000, .ramp = true, .weights = {0.0, 0.0, 1.0}}});
  ExpectWithinOneDocument(schedule, 4000);
}

TEST(Mixer, ARampToWeightZeroAndBackStartsTheDeficitsAfresh) {
  const MixSchedule schedule({{.step = 0, .weights = {0.5, 0.5, 0.0}},
                              {.step = 100, .ramp = true, .weights = {1.0, 0.0, 0.0}},
                              {.step = 200, .ramp = true, .weights = {0.2, 0.4, 0.4}}});
  ExpectWithinOneDocument(schedule, 300);
}

TEST(MixSchedule, NormalizingTwiceChangesNothing) {
  const std::vector<double> once = MixSchedule::Normalized({0.3, 0.6, 0.1});
  EXPECT_EQ(MixSchedule::Normalized(once), once);
  const std::vector<double> thirds = MixSchedule::Normalized({1, 1, 1});
  EXPECT_EQ(MixSchedule::Normalized(thirds), thirds);
  EXPECT_EQ(MixSchedule::Normalized({3, 1}), (std::vector<double>{0.75, 0.25}));
}

TEST(MixSchedule, WeightsJumpAndRampBetweenEntries) {
  const MixSchedule schedule({{.step = 0, .weights = {1.0, 0.0}},
                              {.step = 10, .weights = {0.5, 0.5}},
                              {.step = 20, .ramp = true, .weights = {0.0, 1.0}}});
  EXPECT_EQ(schedule.WeightsAt(0), (std::vector<double>{1.0, 0.0}));
  EXPECT_EQ(schedule.WeightsAt(9), (std::vector<double>{1.0, 0.0}));
  EXPECT_EQ(schedule.WeightsAt(10), (std::vector<double>{0.5, 0.5}));
  EXPECT_DOUBLE_EQ(schedule.WeightsAt(15)[0], 0.25);
  EXPECT_DOUBLE_EQ(schedule.WeightsAt(15)[1], 0.75);
  EXPECT_EQ(schedule.WeightsAt(20), (std::vector<double>{0.0, 1.0}));
  EXPECT_EQ(schedule.WeightsAt(1'000'000), (std::vector<double>{0.0, 1.0}));
  EXPECT_FALSE(schedule.JumpsAt(0));
  EXPECT_TRUE(schedule.JumpsAt(10));
  EXPECT_FALSE(schedule.JumpsAt(11));
  EXPECT_FALSE(schedule.JumpsAt(20));  // a ramp's end
  EXPECT_EQ(schedule.EntryAt(9), 0u);
  EXPECT_EQ(schedule.EntryAt(15), 1u);
  EXPECT_EQ(schedule.EntryAt(20), 2u);
  EXPECT_TRUE(schedule.EverPositive(1));
  EXPECT_FALSE(MixSchedule::Constant({1.0, 0.0}).EverPositive(1));
}

// A resume or SetWeights starts afresh where the new schedule jumps or differs at that step.
TEST(MixSchedule, StartsAfreshAtAJumpOrWhereTheWeightsDiffer) {
  const MixSchedule before(
      {{.step = 0, .weights = {1.0, 0.0}}, {.step = 100, .ramp = true, .weights = {0.0, 1.0}}});
  EXPECT_FALSE(before.StartsAfreshAt(50, before));
  EXPECT_TRUE(before.SetFrom(50, {1, 1}).StartsAfreshAt(50, before));
  const MixSchedule later(
      {{.step = 0, .weights = {1.0, 0.0}}, {.step = 100, .ramp = true, .weights = {0.5, 0.5}}});
  EXPECT_TRUE(later.StartsAfreshAt(50, before));  // the ramp goes elsewhere: other weights
  EXPECT_FALSE(later.StartsAfreshAt(0, before));  // the same weights at step 0
  const MixSchedule jump({{.step = 0, .weights = {1.0, 0.0}}, {.step = 50, .weights = {1.0, 0.0}}});
  EXPECT_TRUE(jump.StartsAfreshAt(50, MixSchedule::Constant({1.0, 0.0})));
  EXPECT_FALSE(jump.StartsAfreshAt(51, MixSchedule::Constant({1.0, 0.0})));
}

TEST(MixSchedule, SetFromKeepsThePastAndEndsARampWhereItStood) {
  const MixSchedule schedule({{.step = 0, .weights = {1.0, 0.0}},
                              {.step = 100, .ramp = true, .weights = {0.0, 1.0}},
                              {.step = 200, .weights = {0.5, 0.5}}});
  const MixSchedule set = schedule.SetFrom(51, {3, 1});
  ASSERT_EQ(set.entries().size(), 3u);
  EXPECT_EQ(set.entries()[1].step, 50u);
  EXPECT_TRUE(set.entries()[1].ramp);
  EXPECT_EQ(set.WeightsAt(50), schedule.WeightsAt(50));
  for (uint64_t step = 0; step < 50; ++step) {
    EXPECT_NEAR(set.WeightsAt(step)[0], schedule.WeightsAt(step)[0], 1e-12) << step;
  }
  EXPECT_EQ(set.WeightsAt(51), (std::vector<double>{0.75, 0.25}));
  EXPECT_EQ(set.WeightsAt(500), (std::vector<double>{0.75, 0.25}));  // for good
  EXPECT_TRUE(set.JumpsAt(51));
  // At step 0 the whole schedule is replaced; at an entry's step, that entry goes.
  EXPECT_EQ(schedule.SetFrom(0, {1, 1}), MixSchedule::Constant({0.5, 0.5}));
  EXPECT_EQ(schedule.SetFrom(200, {1, 0}).entries().size(), 3u);
  EXPECT_TRUE(schedule.SetFrom(200, {1, 0}).JumpsAt(200));
  EXPECT_TRUE(schedule.SetFrom(200, {0, 1}).JumpsAt(200));  // the weights of step 199 again
}

}  // namespace
}  // namespace stoker

// The schedule of the mixing weights (mixing/mix_schedule.h).
#include "mixing/mix_schedule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace stoker {
namespace {

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
  EXPECT_EQ(schedule.EntryAt(9), 0u);
  EXPECT_EQ(schedule.EntryAt(15), 1u);
  EXPECT_EQ(schedule.EntryAt(20), 2u);
  EXPECT_TRUE(schedule.EverPositive(1));
  EXPECT_FALSE(MixSchedule::Constant({1.0, 0.0}).EverPositive(1));
}

// A resume or SetWeights starts afresh where the new schedule jumps or differs at that step.
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
  // At step 0 the whole schedule is replaced; at an entry's step, that entry goes.
  EXPECT_EQ(schedule.SetFrom(0, {1, 1}), MixSchedule::Constant({0.5, 0.5}));
  EXPECT_EQ(schedule.SetFrom(200, {1, 0}).entries().size(), 3u);
}

}  // namespace
}  // namespace stoker

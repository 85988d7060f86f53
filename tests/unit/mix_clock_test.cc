// MixClock: the tokens each dataset has earned by a step, against sums of the schedule's weights
// taken step by step.

#include "mixing/mix_clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mixing/mix_schedule.h"

namespace stoker {
namespace {

constexpr uint64_t kStepTokens = 8 * 4097;

// step_tokens * the sum of w_d(t) over t < step, one step at a time.
double SummedStepByStep(const MixSchedule& schedule, uint32_t d, uint64_t step) {
  double sum = 0;
  for (uint64_t t = 0; t < step; ++t) sum += schedule.WeightsAt(t)[d];
  return static_cast<double>(kStepTokens) * sum;
}

// Weights that jump and ramp: dataset 2 ramps up from 0 over steps 40..90 while dataset 1 ramps
// down to 0; dataset 3 weighs 1e-9 throughout.
MixSchedule Changing() {
  return MixSchedule(
      {{.step = 0, .weights = MixSchedule::Normalized({0.7, 0.3, 0.0, 1e-9})},
       {.step = 40, .weights = MixSchedule::Normalized({0.4, 0.6, 0.0, 1e-9})},
       {.step = 90, .ramp = true, .weights = MixSchedule::Normalized({0.5, 0.0, 0.5, 1e-9})},
       {.step = 150, .weights = MixSchedule::Normalized({0.1, 0.6, 0.3, 1e-9})},
       {.step = 151, .ramp = true, .weights = {0.25, 0.25, 0.25, 0.25}}});
}

TEST(MixClock, AtConstantWeightsEachDatasetEarnsItsShareOfEveryStep) {
  const MixClock clock(MixSchedule::Constant({0.5, 0.25, 0.25}), kStepTokens);
  for (uint64_t step : {0, 1, 7, 1000, 10'000'000}) {
    EXPECT_EQ(clock.Earned(0, step), 0.5 * kStepTokens * step);
    EXPECT_EQ(clock.Earned(1, step), 0.25 * kStepTokens * step);
  }
}

TEST(MixClock, EqualsTheWeightsSummedStepByStepThroughJumpsAndRamps) {
  const MixSchedule schedule = Changing();
  const MixClock clock(schedule, kStepTokens);
  for (uint32_t d = 0; d < 4; ++d) {
    for (uint64_t step = 0; step <= 300; ++step) {
      const double expected = SummedStepByStep(schedule, d, step);
      EXPECT_NEAR(clock.Earned(d, step), expected, 1e-9 * (1 + expected))
          << "dataset " << d << " step " << step;
    }
  }
}

TEST(MixClock, TheDatasetsTogetherEarnEveryTokenAndNoneEverGoesBack) {
  const MixClock clock(Changing(), kStepTokens);
  std::vector<double> before(4, 0.0);
  for (uint64_t step = 0; step <= 300; ++step) {
    double total = 0;
    for (uint32_t d = 0; d < 4; ++d) {
      const double earned = clock.Earned(d, step);
      EXPECT_GE(earned, before[d]) << "dataset " << d << " step " << step;
      before[d] = earned;
      total += earned;
    }
    EXPECT_NEAR(total, static_cast<double>(kStepTokens) * step, 1e-9 * kStepTokens * (1 + step));
  }
}

TEST(MixClock, ARampFromZeroEarnsFromZeroAndATinyWeightEarnsItsTinyShare) {
  const MixSchedule schedule = Changing();
  const MixClock clock(schedule, kStepTokens);
  // Dataset 2 weighs 0 up to step 40 and at it, then ramps to w = 0.5 at step 90: n steps after
  // 40 it has earned step_tokens * w / 50 * n (n - 1) / 2, nothing at step 41, little at 42.
  const double w = schedule.entries()[2].weights[2];
  EXPECT_EQ(clock.Earned(2, 40), 0.0);
  EXPECT_EQ(clock.Earned(2, 41), 0.0);
  for (uint64_t n : {2, 3, 25, 50}) {
    const double expected = kStepTokens * w / 50 * (n * (n - 1) / 2.0);
    EXPECT_NEAR(clock.Earned(2, 40 + n), expected, 1e-9 * expected) << n;
  }
  // The 1e-9 dataset earns 1e-9 of 150 steps' tokens, about a two-hundredth of one token: never
  // one document at each change of the weights.
  const double tiny = clock.Earned(3, 150);
  EXPECT_NEAR(tiny, 1e-9 * kStepTokens * 150, 1e-6 * tiny);
  EXPECT_LT(tiny, 0.01);
}

TEST(MixClock, GivesTheSameBitsForTheSameScheduleWhereverItIsBuilt) {
  const MixClock a(Changing(), kStepTokens);
  const MixClock b(Changing(), kStepTokens);
  for (uint64_t step : {0, 39, 40, 41, 89, 90, 120, 150, 151, 152, 5'000'000}) {
    for (uint32_t d = 0; d < 4; ++d) EXPECT_EQ(a.Earned(d, step), b.Earned(d, step));
  }
}

// DueStep is the first step by whose end the tokens are earned; DueTime lies within it and grows
// with the tokens; a dataset whose weight ends at 0 never earns more than it had by then.
TEST(MixClock, TellsWhenADatasetHasEarnedSomeTokens) {
  const MixClock clock(Changing(), kStepTokens);
  for (uint32_t d = 0; d < 4; ++d) {
    double before = 0;
    for (double tokens : {0.5, 1.0, 100.0, 4097.0, 1e5, 1e6, 3e6, 1e7}) {
      const uint64_t step = clock.DueStep(d, tokens);
      ASSERT_NE(step, UINT64_MAX) << "dataset " << d << ", " << tokens;
      EXPECT_GE(clock.Earned(d, step + 1), tokens);
      if (step > 0) {
        EXPECT_LT(clock.Earned(d, step), tokens) << "dataset " << d << ", " << tokens;
      }
      const double time = clock.DueTime(d, tokens);
      EXPECT_GT(time, static_cast<double>(step));
      EXPECT_LE(time, static_cast<double>(step + 1));
      EXPECT_GT(time, before);
      before = time;
    }
  }
  const MixClock ends(
      MixSchedule({{.step = 0, .weights = {0.5, 0.5}}, {.step = 10, .weights = {1.0, 0.0}}}),
      kStepTokens);
  EXPECT_EQ(ends.DueStep(1, 5.0 * kStepTokens), 9u);
  EXPECT_EQ(ends.DueStep(1, 5.0 * kStepTokens + 1), UINT64_MAX);
  EXPECT_EQ(ends.DueTime(1, 5.0 * kStepTokens + 1), std::numeric_limits<double>::infinity());
}

// A run resumed on other ranks at step 50: its clock starts where the first one stood and earns
// at its own step tokens from there.
TEST(MixClock, AClockFromABaseGoesOnFromWhatTheOneBeforeHadEarned) {
  const MixSchedule schedule = Changing();
  const MixClock first(schedule, kStepTokens);
  const MixClock second(schedule, 3 * kStepTokens, first.BaseAt(50));
  for (uint32_t d = 0; d < 4; ++d) {
    EXPECT_EQ(second.Earned(d, 50), first.Earned(d, 50));
    for (uint64_t step : {51, 90, 151, 300}) {
      const double expected = first.Earned(d, 50) + 3 * (SummedStepByStep(schedule, d, step) -
                                                         SummedStepByStep(schedule, d, 50));
      EXPECT_NEAR(second.Earned(d, step), expected, 1e-9 * (1 + expected)) << d << ", " << step;
    }
  }
}

}  // namespace
}  // namespace stoker

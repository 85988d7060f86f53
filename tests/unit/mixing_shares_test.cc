// MixingShares's text and gap (stoker/mixing_shares.h), and DeliveredTokens (mixing/lane.h): the
// tokens a lane delivered are those it started less what its open units still owe.
#include "stoker/mixing_shares.h"

#include <gtest/gtest.h>

#include "mixing/lane.h"

namespace stoker {
namespace {

MixingShares Shares(std::vector<uint64_t> tokens, std::vector<double> promised,
                    std::vector<double> weights) {
  return {.from_step = 300,
          .to_step = 400,
          .datasets = {"code", "math", "web"},
          .tokens = std::move(tokens),
          .promised = std::move(promised),
          .weights = std::move(weights)};
}

TEST(MixingShares, TheTextGivesTheWeightsAndTheSharesSinceTheStepCounted) {
  const MixingShares s = Shares({2980, 0, 7020}, {3000, 0, 7000}, {0.3, 0, 0.7});
  EXPECT_EQ(s.Text(), "weights code=0.300 web=0.700 | shares since step 300 code=0.298 web=0.702");
  EXPECT_DOUBLE_EQ(s.LargestGap(), 20);
}

TEST(MixingShares, PromisedSharesFollowWhereTheyDifferFromTheWeights) {
  // Along a ramp: the weights of the last step are not those of the steps counted.
  const MixingShares s = Shares({2000, 3000, 5000}, {2500, 2500, 5000}, {0.2, 0.4, 0.4});
  EXPECT_EQ(s.Text(),
            "weights code=0.200 math=0.400 web=0.400 | shares since step 300 code=0.200 "
            "math=0.300 web=0.500 | promised code=0.250 math=0.250 web=0.500");
  EXPECT_DOUBLE_EQ(s.LargestGap(), 500);
}

TEST(MixingShares, NothingCountedShowsZeroShares) {
  const MixingShares s = Shares({0, 0, 0}, {0, 0, 0}, {0.5, 0, 0.5});
  EXPECT_EQ(s.Text(), "weights code=0.500 web=0.500 | shares since step 300 code=0.000 web=0.000");
}

TEST(DeliveredTokens, StartedLessWhatOpenUnitsStillOwe) {
  LaneState state;
  state.started = {1000, 250};
  state.open.push_back({.unit = {.dataset = 0, .dealt = {.size = 300}}, .done = 120});
  state.open.push_back({.unit = {.dataset = 1, .dealt = {.size = 50}}, .done = 0});
  EXPECT_EQ(DeliveredTokens(state, 3), (std::vector<uint64_t>{820, 200, 0}));
  EXPECT_EQ(DeliveredTokens(LaneState{}, 2), (std::vector<uint64_t>{0, 0}));
}

// After a rescale a lane may hold an open unit larger than its part of the started tokens: its
// own figure wraps, and the lanes' sum is still the tokens delivered.
TEST(DeliveredTokens, TheLanesSumIsExactWhereOneLaneHoldsAnotherLanesOpenUnit) {
  LaneState one, two;
  one.started = {100};
  one.open.push_back({.unit = {.dataset = 0, .dealt = {.size = 300}}, .done = 50});
  two.started = {400};
  EXPECT_EQ(DeliveredTokens(one, 1)[0] + DeliveredTokens(two, 1)[0], 250u);
}

}  // namespace
}  // namespace stoker

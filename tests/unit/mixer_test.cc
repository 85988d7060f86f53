// The mixer's choice of the next dataset (core/mixer.h).
#include "core/mixer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace stoker {
namespace {

TEST(Mixer, WeightsAreNormalized) {
  const std::vector<double> weights = {3, 1, 0};
  const Mixer mixer(weights);
  EXPECT_DOUBLE_EQ(mixer.weights()[0], 0.75);
  EXPECT_DOUBLE_EQ(mixer.weights()[1], 0.25);
  EXPECT_DOUBLE_EQ(mixer.weights()[2], 0.0);
}

TEST(Mixer, PicksTheDatasetFurthestBelowItsShareAndTiesGoLow) {
  const std::vector<double> weights = {1, 1};
  const Mixer mixer(weights);
  const std::vector<bool> all = {true, true};
  EXPECT_EQ(mixer.Pick(std::vector<uint64_t>{0, 0}, all), 0u);  // a tie: the lower index
  EXPECT_EQ(mixer.Pick(std::vector<uint64_t>{10, 0}, all), 1u);
  EXPECT_EQ(mixer.Pick(std::vector<uint64_t>{10, 30}, all), 0u);
  EXPECT_EQ(mixer.Pick(std::vector<uint64_t>{20, 20}, all), 0u);
}

TEST(Mixer, WeightZeroAndUnavailableDatasetsAreNeverPicked) {
  const std::vector<double> weights = {0, 1, 1};
  const Mixer mixer(weights);
  // Dataset 0 lies furthest below nothing: weight 0 is never read, whatever it delivered.
  EXPECT_EQ(mixer.Pick(std::vector<uint64_t>{0, 50, 40}, {true, true, true}), 2u);
  EXPECT_EQ(mixer.Pick(std::vector<uint64_t>{0, 50, 40}, {true, true, false}), 1u);
  EXPECT_EQ(mixer.Pick(std::vector<uint64_t>{0, 50, 40}, {true, false, false}), std::nullopt);
}

// Fed documents of varying lengths, every dataset's share of the tokens stays within one
// document of its weight at every step.
TEST(Mixer, SharesStayWithinOneDocumentOfTheirWeights) {
  const std::vector<double> weights = {0.5, 0.3, 0.2};
  const Mixer mixer(weights);
  const std::vector<bool> all(3, true);
  std::vector<uint64_t> delivered(3, 0);
  uint64_t total = 0, longest = 0;
  for (uint64_t i = 0; i < 20000; ++i) {
    const uint32_t d = mixer.Pick(delivered, all).value();
    const uint64_t length = 1 + (i * 7919 + d * 104729) % 997;  // 1..997 tokens
    longest = std::max(longest, length);
    delivered[d] += length;
    total += length;
    for (uint32_t k = 0; k < 3; ++k) {
      const double off = std::abs(static_cast<double>(delivered[k]) - weights[k] * total);
      ASSERT_LE(off, static_cast<double>(longest)) << "dataset " << k << " after " << i;
    }
  }
}

}  // namespace
}  // namespace stoker

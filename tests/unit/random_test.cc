// CounterRng and DeriveKey: fully specified (pinned values), resumable by value, and with the
// distributions they promise.
#include "order/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "stoker/error.h"

namespace stoker {
namespace {

std::vector<uint64_t> Draw(CounterRng* rng, int n) {
  std::vector<uint64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(rng->Next());
  return out;
}

// Pinned: CounterRng(key) is SplitMix64 seeded with `key`. The values for key 0 are the published
// SplitMix64 reference outputs; those for key 42 were computed with an independent Python model.
TEST(CounterRng, PinnedSplitMix64Values) {
  CounterRng zero(0);
  EXPECT_EQ(Draw(&zero, 4), (std::vector<uint64_t>{0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull,
                                                   0x06c45d188009454full, 0xf88bb8a8724c81ecull}));
  CounterRng forty_two(42);
  EXPECT_EQ(Draw(&forty_two, 4),
            (std::vector<uint64_t>{0xbdd732262feb6e95ull, 0x28efe333b266f103ull,
                                   0x47526757130f9f52ull, 0x581ce1ff0e4ae394ull}));
}

TEST(CounterRng, PinnedDistributionValues) {
  CounterRng below(0);
  std::vector<uint64_t> tens;
  for (int i = 0; i < 5; ++i) tens.push_back(below.NextBelow(10));
  EXPECT_EQ(tens, (std::vector<uint64_t>{8, 4, 0, 9, 1}));
  CounterRng big(0);
  std::vector<uint64_t> millions;
  for (int i = 0; i < 5; ++i) millions.push_back(big.NextBelow(1000003));
  EXPECT_EQ(millions, (std::vector<uint64_t>{883313, 431529, 26433, 970884, 106347}));
  CounterRng unit(0);
  EXPECT_DOUBLE_EQ(unit.NextDouble(), 0.8833108082136426);
  EXPECT_DOUBLE_EQ(unit.NextDouble(), 0.43152799704850997);
}

TEST(CounterRng, CounterCountsDraws) {
  CounterRng rng(7);
  EXPECT_EQ(rng.key(), 7u);
  EXPECT_EQ(rng.counter(), 0u);
  rng.Next();
  EXPECT_EQ(rng.counter(), 1u);
  rng.NextDouble();
  EXPECT_EQ(rng.counter(), 2u);
  rng.NextNormal();  // Box-Muller: two draws
  EXPECT_EQ(rng.counter(), 4u);
  rng.NextBelow(1);  // bound 1 never rejects
  EXPECT_EQ(rng.counter(), 5u);
  EXPECT_EQ(rng.key(), 7u);
}

TEST(CounterRng, ResumesByValue) {
  for (uint64_t key : {0ull, 1ull, 0xdeadbeefull, ~0ull}) {
    CounterRng original(key);
    Draw(&original, 137);
    original.NextBelow(12345);
    original.NextNormal();
    // A stream rebuilt from its (key, counter) continues exactly as the original does.
    CounterRng resumed(original.key(), original.counter());
    EXPECT_EQ(Draw(&resumed, 500), Draw(&original, 500)) << key;
    EXPECT_EQ(resumed.counter(), original.counter());
    EXPECT_DOUBLE_EQ(resumed.NextNormal(), original.NextNormal());
    EXPECT_EQ(resumed.NextBelow(1000), original.NextBelow(1000));
  }
  // Starting at counter c is the same as drawing c values first.
  CounterRng skipped(99, 57);
  CounterRng walked(99);
  Draw(&walked, 57);
  EXPECT_EQ(Draw(&skipped, 10), Draw(&walked, 10));
}

TEST(CounterRng, SameKeySameStreamDifferentKeysDiffer) {
  CounterRng a(12345), b(12345);
  EXPECT_EQ(Draw(&a, 100), Draw(&b, 100));
  std::set<uint64_t> firsts;
  for (uint64_t key = 0; key < 1000; ++key) {
    CounterRng rng(key);
    firsts.insert(rng.Next());
  }
  EXPECT_EQ(firsts.size(), 1000u);
  CounterRng c(1), d(2);
  const auto from_c = Draw(&c, 64), from_d = Draw(&d, 64);
  int equal = 0;
  for (size_t i = 0; i < from_c.size(); ++i) equal += from_c[i] == from_d[i];
  EXPECT_EQ(equal, 0);
}

TEST(CounterRng, NextBelowStaysInRangeAndIsRoughlyUniform) {
  constexpr int kBuckets = 10;
  constexpr int kDraws = 100000;
  CounterRng rng(DeriveKey(1, "chi-square"));
  std::vector<int> counts(kBuckets, 0);
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t v = rng.NextBelow(kBuckets);
    ASSERT_LT(v, static_cast<uint64_t>(kBuckets));
    ++counts[v];
  }
  double chi2 = 0;
  const double expected = static_cast<double>(kDraws) / kBuckets;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  // 9 degrees of freedom: P(chi2 > 33.7) = 1e-4. A generous bound; the stream is fixed anyway.
  EXPECT_LT(chi2, 40.0);
  // And not suspiciously perfect (a counter mod 10 would give 0).
  EXPECT_GT(chi2, 0.5);
}

TEST(CounterRng, NextBelowEdgeBounds) {
  CounterRng one(5);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(one.NextBelow(1), 0u);
  EXPECT_EQ(one.counter(), 1000u);

  // 2^63 + 1: about half of the raw draws are rejected; results stay below the bound and are
  // spread over the whole range.
  constexpr uint64_t kBound = (uint64_t{1} << 63) + 1;
  CounterRng rng(6);
  constexpr int kCalls = 20000;
  int low_half = 0;
  for (int i = 0; i < kCalls; ++i) {
    const uint64_t v = rng.NextBelow(kBound);
    ASSERT_LT(v, kBound);
    low_half += v < (uint64_t{1} << 62);
  }
  EXPECT_NEAR(static_cast<double>(low_half) / kCalls, 0.5, 0.02);
  EXPECT_GT(rng.counter(), 1.8 * kCalls) << "the rejection step did not run";
  EXPECT_LT(rng.counter(), 2.2 * kCalls);

  // 3 * 2^62: a modulo mapping would put half of the values below 2^62; uniform puts a third.
  constexpr uint64_t kThreeQuarters = uint64_t{3} << 62;
  CounterRng third(7);
  int below = 0;
  for (int i = 0; i < kCalls; ++i) {
    const uint64_t v = third.NextBelow(kThreeQuarters);
    ASSERT_LT(v, kThreeQuarters);
    below += v < (uint64_t{1} << 62);
  }
  EXPECT_NEAR(static_cast<double>(below) / kCalls, 1.0 / 3, 0.02);

  CounterRng max(8);
  for (int i = 0; i < 100; ++i) ASSERT_LT(max.NextBelow(UINT64_MAX), UINT64_MAX);

  CounterRng empty(9);
  EXPECT_THROW(empty.NextBelow(0), InternalError);
}

TEST(CounterRng, NextDoubleInUnitInterval) {
  CounterRng rng(DeriveKey(2, "double"));
  double sum = 0, lowest = 1, highest = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const double u = rng.NextDouble();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    lowest = std::min(lowest, u);
    highest = std::max(highest, u);
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 0.005);
  EXPECT_LT(lowest, 0.001);
  EXPECT_GT(highest, 0.999);
}

TEST(CounterRng, NextNormalHasMeanZeroAndVarianceOne) {
  CounterRng rng(DeriveKey(3, "normal"));
  constexpr int kDraws = 200000;
  double sum = 0, sum_sq = 0;
  int beyond_two_sigma = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double z = rng.NextNormal();
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum_sq += z * z;
    beyond_two_sigma += std::abs(z) > 2.0;
  }
  const double mean = sum / kDraws;
  const double variance = sum_sq / kDraws - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.015);     // standard error 0.0022
  EXPECT_NEAR(variance, 1.0, 0.02);  // standard error 0.0032
  EXPECT_NEAR(static_cast<double>(beyond_two_sigma) / kDraws, 0.0455, 0.004);
}

TEST(DeriveKey, DependsOnEveryInput) {
  std::set<uint64_t> keys;
  int made = 0;
  for (uint64_t seed : {0ull, 1ull, 2ull}) {
    for (const char* purpose : {"", "synth", "shuffle", "synth ", "Synth", "mix"}) {
      for (uint64_t a : {0ull, 1ull, 7ull}) {
        for (uint64_t b : {0ull, 1ull, 7ull}) {
          keys.insert(DeriveKey(seed, purpose, a, b));
          ++made;
        }
      }
    }
  }
  EXPECT_EQ(keys.size(), static_cast<size_t>(made));
  EXPECT_NE(DeriveKey(1, "p", 1, 2), DeriveKey(1, "p", 2, 1));
  EXPECT_NE(DeriveKey(1, "ab", 0, 0), DeriveKey(1, "a", 0, 0));
}

TEST(DeriveKey, IsDeterministicAndPinned) {
  EXPECT_EQ(DeriveKey(42, "synth"), DeriveKey(42, "synth", 0, 0));
  EXPECT_EQ(DeriveKey(42, "synth", 3, 9), DeriveKey(42, "synth", 3, 9));
  // XXH3-64 of purpose + seed, a, b as little-endian 8-byte words. Pinned so that a change of the
  // derivation (which would change every synthetic corpus and shuffle) is seen.
  EXPECT_EQ(DeriveKey(0, ""), 0x743df94ee4c78a2aull);
  EXPECT_EQ(DeriveKey(42, "synth", 3, 9), 0xe24442f78026e683ull);
}

}  // namespace
}  // namespace stoker

// LengthHistogram: exact below 128, within 1/64 above, buckets consistent over the whole uint64
// range, merging equals adding, and the flat form round-trips.
#include "tokens/length_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "order/random.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using H = LengthHistogram;

// The nearest-rank percentile of `sorted`: the smallest value with at least ceil(q * n) values at
// or below it, computed in exact integer arithmetic for q = numerator / denominator.
uint64_t NearestRank(const std::vector<uint64_t>& sorted, uint64_t numerator,
                     uint64_t denominator) {
  const uint64_t n = sorted.size();
  uint64_t rank = (numerator * n + denominator - 1) / denominator;
  rank = std::max<uint64_t>(rank, 1);
  return sorted[rank - 1];
}

H HistogramOf(const std::vector<uint64_t>& lengths) {
  H h;
  for (uint64_t v : lengths) h.Add(v);
  return h;
}

// Lengths spread over many orders of magnitude: log-uniform up to 2^max_bits.
std::vector<uint64_t> LogUniformLengths(uint64_t key, int n, int max_bits) {
  CounterRng rng(key);
  std::vector<uint64_t> out;
  for (int i = 0; i < n; ++i) {
    const int bits = static_cast<int>(rng.NextBelow(max_bits + 1));
    out.push_back(bits == 0 ? 0 : rng.NextBelow(uint64_t{1} << bits));
  }
  return out;
}

TEST(LengthHistogram, EmptyHistogram) {
  H h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.sum(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.Percentile(0.5), 0u);
  EXPECT_EQ(h.Percentile(1.0), 0u);
}

TEST(LengthHistogram, BucketEdges) {
  EXPECT_EQ(H::BucketOf(0), 0);
  EXPECT_EQ(H::BucketOf(63), 63);
  EXPECT_EQ(H::BucketOf(64), 64);
  EXPECT_EQ(H::BucketOf(127), 127);
  EXPECT_EQ(H::BucketOf(128), 128);
  EXPECT_EQ(H::BucketOf(129), 128);  // from 128 on, buckets are two wide
  EXPECT_EQ(H::BucketOf(130), 129);
  EXPECT_EQ(H::BucketOf(UINT64_MAX), H::kBuckets - 1);
  EXPECT_EQ(H::BucketLow(0), 0u);
  EXPECT_EQ(H::BucketLow(127), 127u);
  EXPECT_EQ(H::BucketLow(128), 128u);
  EXPECT_EQ(H::BucketLow(129), 130u);
  EXPECT_EQ(H::BucketLow(H::kBuckets - 1), 127ull << 57);
  const uint64_t two_to_40 = uint64_t{1} << 40;
  EXPECT_EQ(H::BucketLow(H::BucketOf(two_to_40)), two_to_40);
  EXPECT_EQ(H::BucketLow(H::BucketOf(two_to_40 - 1)), two_to_40 - (uint64_t{1} << 33));
}

// BucketLow(BucketOf(v)) <= v < BucketLow(BucketOf(v) + 1), exact below 128, within 1/64 above.
void ExpectBucketHolds(uint64_t v) {
  const int b = H::BucketOf(v);
  ASSERT_GE(b, 0) << v;
  ASSERT_LT(b, H::kBuckets) << v;
  const uint64_t low = H::BucketLow(b);
  ASSERT_LE(low, v) << v;
  if (b + 1 < H::kBuckets) {
    ASSERT_LT(v, H::BucketLow(b + 1)) << v;
  }
  if (v < 128) {
    ASSERT_EQ(low, v);
  } else {
    ASSERT_LT(static_cast<double>(v - low), static_cast<double>(v) / 64) << v;
  }
}

TEST(LengthHistogram, BucketOfAndBucketLowAgree) {
  for (uint64_t v = 0; v < 100000; ++v) ExpectBucketHolds(v);
  for (int bit = 0; bit < 64; ++bit) {
    const uint64_t p = uint64_t{1} << bit;
    for (uint64_t v : {p - 1, p, p + 1, p + p / 2, p + p / 3}) ExpectBucketHolds(v);
  }
  ExpectBucketHolds(UINT64_MAX);
  ExpectBucketHolds(UINT64_MAX - 1);
  CounterRng rng(11);
  for (int i = 0; i < 100000; ++i) ExpectBucketHolds(rng.Next() >> rng.NextBelow(64));
}

TEST(LengthHistogram, BucketLowIsIncreasingAndInvertible) {
  for (int b = 0; b < H::kBuckets; ++b) {
    ASSERT_EQ(H::BucketOf(H::BucketLow(b)), b);
    if (b > 0) {
      ASSERT_LT(H::BucketLow(b - 1), H::BucketLow(b)) << b;
    }
  }
}

TEST(LengthHistogram, PercentilesAreExactBelow128) {
  std::vector<uint64_t> lengths;
  for (uint64_t v = 1; v <= 100; ++v) lengths.push_back(v);
  const H one_to_100 = HistogramOf(lengths);
  for (uint64_t k = 0; k <= 100; ++k) {
    // Every integer percentile of 1..100 is itself (including the ones where k / 100.0 * 100 is
    // not exactly k in floating point: 7, 14, 28, 55, 56).
    EXPECT_EQ(one_to_100.Percentile(k / 100.0), std::max<uint64_t>(k, 1)) << "p" << k;
  }
  // A skewed sample of lengths 0..127 with repeats, against the nearest rank.
  lengths.clear();
  CounterRng rng(5);
  for (int i = 0; i < 5000; ++i) lengths.push_back(rng.NextBelow(rng.NextBelow(128) + 1));
  const H h = HistogramOf(lengths);
  std::sort(lengths.begin(), lengths.end());
  for (uint64_t k = 0; k <= 1000; ++k) {
    ASSERT_EQ(h.Percentile(k / 1000.0), NearestRank(lengths, k, 1000)) << "q=" << k / 1000.0;
  }
  EXPECT_EQ(h.Percentile(0.0), lengths.front());
  EXPECT_EQ(h.Percentile(1.0), lengths.back());
  EXPECT_EQ(h.Percentile(-1.0), lengths.front());  // clamped to [0, 1]
  EXPECT_EQ(h.Percentile(2.0), lengths.back());
}

TEST(LengthHistogram, PercentilesWithinOnePointSixPercentAbove128) {
  std::vector<uint64_t> lengths = LogUniformLengths(17, 20000, 40);
  lengths.push_back(uint64_t{1} << 40);
  const H h = HistogramOf(lengths);
  std::sort(lengths.begin(), lengths.end());
  for (uint64_t k = 0; k <= 1000; ++k) {
    const uint64_t exact = NearestRank(lengths, k, 1000);
    const uint64_t got = h.Percentile(k / 1000.0);
    ASSERT_LE(got, exact) << "q=" << k / 1000.0;
    if (exact < 128) {
      ASSERT_EQ(got, exact) << "q=" << k / 1000.0;
    } else {
      ASSERT_LE(static_cast<double>(exact - got), 0.016 * static_cast<double>(exact))
          << "q=" << k / 1000.0 << " exact " << exact << " got " << got;
    }
  }
  EXPECT_EQ(h.Percentile(0.0), lengths.front());
  EXPECT_EQ(h.max(), uint64_t{1} << 40);
}

TEST(LengthHistogram, PercentileIsClampedToMinAndMax) {
  H h;
  h.Add(1001);
  h.Add(1002);
  // 1001 and 1002 share the bucket [1000, 1008): the answers stay within what was seen.
  EXPECT_EQ(H::BucketLow(H::BucketOf(1002)), 1000u);
  EXPECT_EQ(h.Percentile(0.0), 1001u);
  EXPECT_EQ(h.Percentile(1.0), 1001u);
  H single;
  single.Add(UINT64_MAX);
  EXPECT_EQ(single.Percentile(0.5), UINT64_MAX);
  EXPECT_EQ(single.min(), UINT64_MAX);
}

TEST(LengthHistogram, StatisticsAreExact) {
  const H h = HistogramOf({5, 0, 300, 70000});
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.sum(), 70305u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 70000u);
  EXPECT_DOUBLE_EQ(h.mean(), 70305.0 / 4);
}

TEST(LengthHistogram, MergeEqualsAddingEverythingToOne) {
  const std::vector<uint64_t> lengths = LogUniformLengths(23, 9000, 50);
  H whole, parts[3];
  for (size_t i = 0; i < lengths.size(); ++i) {
    whole.Add(lengths[i]);
    parts[i % 3].Add(lengths[i]);
  }
  H merged;
  for (const H& part : parts) merged.Merge(part);
  merged.Merge(H());  // an empty rank changes nothing, in particular not the minimum
  EXPECT_EQ(merged.ToWords(), whole.ToWords());
  EXPECT_EQ(merged.min(), whole.min());
  EXPECT_EQ(merged.Percentile(0.9), whole.Percentile(0.9));
  // Merging into a non-empty histogram in another order gives the same.
  H reordered = parts[2];
  reordered.Merge(parts[0]);
  reordered.Merge(parts[1]);
  EXPECT_EQ(reordered.ToWords(), whole.ToWords());
}

TEST(LengthHistogram, WordsRoundTrip) {
  for (const std::vector<uint64_t>& lengths :
       {std::vector<uint64_t>{}, std::vector<uint64_t>{0}, std::vector<uint64_t>{UINT64_MAX},
        LogUniformLengths(29, 1000, 63)}) {
    const H h = HistogramOf(lengths);
    const std::vector<uint64_t> words = h.ToWords();
    ASSERT_EQ(words.size(), static_cast<size_t>(H::kBuckets + 4));
    const H back = H::FromWords(words);
    EXPECT_EQ(back.ToWords(), words);
    EXPECT_EQ(back.count(), h.count());
    EXPECT_EQ(back.sum(), h.sum());
    EXPECT_EQ(back.min(), h.min());
    EXPECT_EQ(back.max(), h.max());
    EXPECT_EQ(back.Percentile(0.5), h.Percentile(0.5));
  }
  // Element-wise sums of flat forms (what an all-reduce does) merge, except min and max, which
  // the caller reduces separately: check that the counts part adds up.
  const H a = HistogramOf({1, 2, 3}), b = HistogramOf({200, 300});
  std::vector<uint64_t> sum = a.ToWords();
  const std::vector<uint64_t> bw = b.ToWords();
  for (int i = 0; i < H::kBuckets + 2; ++i) sum[i] += bw[i];
  H merged = a;
  merged.Merge(b);
  EXPECT_TRUE(std::equal(sum.begin(), sum.begin() + H::kBuckets + 2, merged.ToWords().begin()));
}

TEST(LengthHistogram, FromWordsRejectsWrongSize) {
  const std::vector<uint64_t> short_words(H::kBuckets + 3, 0);
  EXPECT_THROW(H::FromWords(short_words), InternalError);
}

}  // namespace
}  // namespace stoker

#include "tokens/length_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/check.h"

namespace stoker {

int LengthHistogram::BucketOf(uint64_t length) {
  constexpr uint64_t kSub = 1u << kSubBits;
  if (length < kSub) return static_cast<int>(length);
  const int exponent = std::bit_width(length) - 1;  // >= kSubBits
  const int shift = exponent - kSubBits;
  return static_cast<int>(kSub + shift * kSub + ((length >> shift) - kSub));
}

uint64_t LengthHistogram::BucketLow(int bucket) {
  constexpr int kSub = 1 << kSubBits;
  if (bucket < kSub) return static_cast<uint64_t>(bucket);
  const int shift = (bucket - kSub) / kSub;
  const uint64_t mantissa = kSub + (bucket - kSub) % kSub;
  return mantissa << shift;
}

void LengthHistogram::Add(uint64_t length) {
  ++counts_[BucketOf(length)];
  ++count_;
  sum_ += length;
  min_ = std::min(min_, length);
  max_ = std::max(max_, length);
}

void LengthHistogram::Merge(const LengthHistogram& other) {
  for (int b = 0; b < kBuckets; ++b) counts_[b] += other.counts_[b];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

uint64_t LengthHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  // The nearest rank, ceil(q * count). The product can land a hair above an integer
  // (0.07 * 100 = 7.000000000000001), which must not push the rank one up.
  const double target = std::clamp(q, 0.0, 1.0) * static_cast<double>(count_);
  const auto rank = static_cast<uint64_t>(std::ceil(target * (1.0 - 1e-12)));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[b];
    if (seen >= std::max<uint64_t>(rank, 1)) return std::clamp(BucketLow(b), min(), max_);
  }
  return max_;
}

std::vector<uint64_t> LengthHistogram::ToWords() const {
  std::vector<uint64_t> words(counts_);
  words.insert(words.end(), {count_, sum_, min_, max_});
  return words;
}

LengthHistogram LengthHistogram::FromWords(std::span<const uint64_t> words) {
  STOKER_ASSERT(words.size() == kBuckets + 4, "histogram of {} words", words.size());
  LengthHistogram h;
  std::copy(words.begin(), words.begin() + kBuckets, h.counts_.begin());
  h.count_ = words[kBuckets];
  h.sum_ = words[kBuckets + 1];
  h.min_ = words[kBuckets + 2];
  h.max_ = words[kBuckets + 3];
  return h;
}

}  // namespace stoker

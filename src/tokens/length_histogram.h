// LengthHistogram: document-length percentiles in constant memory, for corpora whose offsets do
// not fit in RAM. Log-linear buckets: lengths below 128 are exact, larger ones fall into 64
// buckets per power of two (within 1.6%). Histograms of different ranks merge by adding counts.
// Pure value type.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace stoker {

class LengthHistogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kBuckets = (1 << kSubBits) + (64 - kSubBits) * (1 << kSubBits);

  LengthHistogram() : counts_(kBuckets, 0) {}

  void Add(uint64_t length);
  void Merge(const LengthHistogram& other);

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  uint64_t sum() const { return sum_; }
  double mean() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_) / count_; }
  // The smallest bucket value at or below which a fraction `q` (0..1) of the lengths lie,
  // clamped to [min, max].
  uint64_t Percentile(double q) const;

  // Flat form, for sending between ranks: the bucket counts, then count, sum, min, max. The
  // counts, count and sum of several histograms merge by summing word by word (an all-reduce
  // with MPI_SUM); min and max do not: take their minimum and maximum apart (an empty
  // histogram's min word is UINT64_MAX), or rebuild each with FromWords and Merge.
  std::vector<uint64_t> ToWords() const;
  static LengthHistogram FromWords(std::span<const uint64_t> words);

  static int BucketOf(uint64_t length);
  static uint64_t BucketLow(int bucket);

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace stoker

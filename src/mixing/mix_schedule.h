// MixSchedule: the mixing weights of every step, a weight schedule (stoker/weights.h) resolved
// against a corpus: per entry, the step it rules from, whether it is a ramp, and its weights per
// dataset in corpus order, normalized.
//
// A step is the number of batches delivered before the one being planned. Entry k rules from
// its step on; a ramp entry k (k > 0) takes the weights linearly from entry k - 1's, at its step,
// to its own, reached at its step. The tokens each dataset earns under it: mixing/mix_clock.h.
//
// The weights are stored as given, never normalized again: a schedule read back from a
// checkpoint compares equal, bit for bit, to the one resolved from the same configuration.
// Pure value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stoker {

struct MixEntry {
  uint64_t step = 0;
  bool ramp = false;
  std::vector<double> weights;  // normalized (they sum to 1), corpus order
  bool operator==(const MixEntry&) const = default;
};

class MixSchedule {
 public:
  MixSchedule() = default;
  // Entries in increasing step order, the first at step 0 and not a ramp, each of the same
  // number of weights, normalized (Normalized()).
  explicit MixSchedule(std::vector<MixEntry> entries);
  // One entry at step 0: the weights of every step.
  static MixSchedule Constant(std::vector<double> normalized);
  // `weights` divided by their sum (which must be positive); weights that sum to 1 within
  // rounding are returned as they are, so that normalizing is idempotent.
  static std::vector<double> Normalized(std::vector<double> weights);

  std::vector<double> WeightsAt(uint64_t step) const;
  // The last entry whose step is at or before `step`: the one in force (or the start of the ramp
  // in force, when the entry after it is a ramp that has not ended).
  size_t EntryAt(uint64_t step) const;
  // Whether dataset `d` has a positive weight at some step.
  bool EverPositive(uint32_t d) const;
  // This schedule up to `step` (a ramp in progress at `step` ends the step before, where it
  // stood), then `weights` (normalized) from `step` on, for good.
  MixSchedule SetFrom(uint64_t step, std::vector<double> weights) const;

  const std::vector<MixEntry>& entries() const { return entries_; }
  size_t datasets() const { return entries_.empty() ? 0 : entries_.front().weights.size(); }
  bool operator==(const MixSchedule&) const = default;

 private:
  std::vector<MixEntry> entries_;
};

}  // namespace stoker

#include "mixing/mix_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/check.h"

namespace stoker {

MixSchedule::MixSchedule(std::vector<MixEntry> entries) : entries_(std::move(entries)) {
  STOKER_ASSERT(!entries_.empty() && entries_.front().step == 0 && !entries_.front().ramp,
                "a mixing schedule starts with a jump at step 0");
  for (size_t k = 0; k < entries_.size(); ++k) {
    STOKER_ASSERT(entries_[k].weights.size() == datasets(), "entry {} of {} datasets", k,
                  entries_[k].weights.size());
    STOKER_ASSERT(k == 0 || entries_[k].step > entries_[k - 1].step,
                  "mixing schedule steps {} and {} out of order", entries_[k - 1].step,
                  entries_[k].step);
  }
}

MixSchedule MixSchedule::Constant(std::vector<double> normalized) {
  return MixSchedule({MixEntry{.step = 0, .ramp = false, .weights = std::move(normalized)}});
}

std::vector<double> MixSchedule::Normalized(std::vector<double> weights) {
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  STOKER_ASSERT(total > 0, "mixing weights sum to {}", total);
  // Weights that sum to 1 but for rounding are kept as they are: normalizing them again would
  // move their last bits, and the weights a checkpoint or Loader::schedule() shows, given back,
  // must be the same weights.
  const double rounding =
      4.0 * static_cast<double>(weights.size() + 1) * std::numeric_limits<double>::epsilon();
  if (std::abs(total - 1) <= rounding) return weights;
  for (double& w : weights) w /= total;
  return weights;
}

size_t MixSchedule::EntryAt(uint64_t step) const {
  const auto after = std::upper_bound(entries_.begin(), entries_.end(), step,
                                      [](uint64_t s, const MixEntry& e) { return s < e.step; });
  return static_cast<size_t>(after - entries_.begin()) - 1;
}

std::vector<double> MixSchedule::WeightsAt(uint64_t step) const {
  const size_t k = EntryAt(step);
  const MixEntry& from = entries_[k];
  if (k + 1 == entries_.size() || !entries_[k + 1].ramp || step == from.step) return from.weights;
  const MixEntry& to = entries_[k + 1];
  const double t = static_cast<double>(step - from.step) / static_cast<double>(to.step - from.step);
  std::vector<double> weights(from.weights.size());
  for (size_t d = 0; d < weights.size(); ++d) {
    weights[d] = (1 - t) * from.weights[d] + t * to.weights[d];
  }
  return weights;
}

bool MixSchedule::EverPositive(uint32_t d) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [d](const MixEntry& e) { return e.weights[d] > 0; });
}

MixSchedule MixSchedule::SetFrom(uint64_t step, std::vector<double> weights) const {
  std::vector<MixEntry> kept;
  for (const MixEntry& e : entries_) {
    if (e.step < step) kept.push_back(e);
  }
  const size_t k = kept.size();
  if (k < entries_.size() && entries_[k].ramp && step - 1 > kept.back().step) {
    // The ramp had gone part of its way: it ends where it stood at the step before.
    kept.push_back({.step = step - 1, .ramp = true, .weights = WeightsAt(step - 1)});
  }
  kept.push_back({.step = step, .ramp = false, .weights = Normalized(std::move(weights))});
  return MixSchedule(std::move(kept));
}

}  // namespace stoker

#include "mixing/mix_clock.h"

#include <utility>

#include "base/check.h"

namespace stoker {

MixClock::MixClock(MixSchedule schedule, uint64_t step_tokens)
    : schedule_(std::move(schedule)), step_tokens_(static_cast<double>(step_tokens)) {
  const std::vector<MixEntry>& entries = schedule_.entries();
  STOKER_ASSERT(!entries.empty(), "a mixing clock of an empty schedule");
  before_.assign(entries.size(), std::vector<double>(schedule_.datasets(), 0.0));
  for (size_t k = 1; k < entries.size(); ++k) {
    for (uint32_t d = 0; d < schedule_.datasets(); ++d) {
      before_[k][d] = before_[k - 1][d] + SegmentSum(k - 1, d, entries[k].step);
    }
  }
}

double MixClock::SegmentSum(size_t k, uint32_t d, uint64_t end) const {
  const std::vector<MixEntry>& entries = schedule_.entries();
  const MixEntry& from = entries[k];
  const double n = static_cast<double>(end - from.step);
  const double u = from.weights[d];
  if (n == 0) return 0;
  if (k + 1 == entries.size() || !entries[k + 1].ramp) return n * u;
  // Along a ramp w(t) = u + (v - u) * (t - a) / (b - a) for t in [a, b): the sum of its first n
  // terms is n * u + (v - u) / (b - a) * n * (n - 1) / 2.
  const MixEntry& to = entries[k + 1];
  const double span = static_cast<double>(to.step - from.step);
  return n * u + (to.weights[d] - u) / span * (n * (n - 1) / 2);
}

double MixClock::Earned(uint32_t d, uint64_t step) const {
  STOKER_ASSERT(d < schedule_.datasets(), "dataset {} of {}", d, schedule_.datasets());
  const size_t k = schedule_.EntryAt(step);
  return step_tokens_ * (before_[k][d] + SegmentSum(k, d, step));
}

}  // namespace stoker

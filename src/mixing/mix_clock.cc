#include "mixing/mix_clock.h"

#include <limits>
#include <utility>

#include "base/check.h"

namespace stoker {

MixClock::MixClock(MixSchedule schedule, uint64_t step_tokens, ClockBase base)
    : schedule_(std::move(schedule)),
      step_tokens_(static_cast<double>(step_tokens)),
      base_(std::move(base)) {
  const std::vector<MixEntry>& entries = schedule_.entries();
  STOKER_ASSERT(!entries.empty(), "a mixing clock of an empty schedule");
  before_.assign(entries.size(), std::vector<double>(schedule_.datasets(), 0.0));
  for (size_t k = 1; k < entries.size(); ++k) {
    for (uint32_t d = 0; d < schedule_.datasets(); ++d) {
      before_[k][d] = before_[k - 1][d] + SegmentSum(k - 1, d, entries[k].step);
    }
  }
  if (base_.earned.empty()) base_.earned.assign(schedule_.datasets(), 0.0);
  STOKER_ASSERT(base_.earned.size() == schedule_.datasets(), "a clock base of {} datasets for {}",
                base_.earned.size(), schedule_.datasets());
  for (uint32_t d = 0; d < schedule_.datasets(); ++d) {
    base_sums_.push_back(WeightSum(d, base_.step));
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

double MixClock::WeightSum(uint32_t d, uint64_t step) const {
  const size_t k = schedule_.EntryAt(step);
  return before_[k][d] + SegmentSum(k, d, step);
}

double MixClock::Earned(uint32_t d, uint64_t step) const {
  STOKER_ASSERT(d < schedule_.datasets(), "dataset {} of {}", d, schedule_.datasets());
  return base_.earned[d] + step_tokens_ * (WeightSum(d, step) - base_sums_[d]);
}

uint64_t MixClock::DueStep(uint32_t d, double tokens) const {
  // Earned(d, step + 1) never decreases with step: the least step that reaches `tokens` lies
  // below the first power of two that does, found by doubling, then by halving the interval.
  constexpr uint64_t kNever = uint64_t{1} << 62;
  const auto reaches = [&](uint64_t step) { return Earned(d, step + 1) >= tokens; };
  if (reaches(0)) return 0;
  uint64_t below = 0;  // never reaches
  uint64_t at = 1;     // reaches, once found
  while (!reaches(at)) {
    if (at >= kNever) return UINT64_MAX;
    below = at;
    at *= 2;
  }
  while (at - below > 1) {
    const uint64_t mid = below + (at - below) / 2;
    (reaches(mid) ? at : below) = mid;
  }
  return at;
}

double MixClock::DueTime(uint32_t d, double tokens) const {
  const uint64_t step = DueStep(d, tokens);
  if (step == UINT64_MAX) return std::numeric_limits<double>::infinity();
  const double before = Earned(d, step);
  if (tokens <= before) return static_cast<double>(step);
  return static_cast<double>(step) + (tokens - before) / (Earned(d, step + 1) - before);
}

ClockBase MixClock::BaseAt(uint64_t step) const {
  ClockBase base{.step = step};
  for (uint32_t d = 0; d < schedule_.datasets(); ++d) base.earned.push_back(Earned(d, step));
  return base;
}

}  // namespace stoker

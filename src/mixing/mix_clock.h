// MixClock: the tokens each dataset has earned by a step, under a mixing schedule.
//
// A global step delivers `step_tokens` tokens over all ranks; at step t dataset d's weight is
// w_d(t) (MixSchedule::WeightsAt, normalized), so by step s it has earned
//   Earned(d, s) = step_tokens * sum over t < s of w_d(t).
// The clock is a function of the schedule alone: no state, nothing starts afresh at a jump, a
// dataset whose weight ramps up from 0 earns from 0 (quadratically along the ramp), and a weight
// of 1e-9 earns 1e-9 of the tokens. The sums over the datasets add up to step_tokens * s within
// rounding. Each segment between entries is summed in closed form (a constant, or an arithmetic
// series along a ramp), so a query costs O(log entries) and gives the same bits on every rank.
// docs/design.md, "Epochs of the dataset", says what the loader does with it.
// Pure value type.
#pragma once

#include <cstdint>
#include <vector>

#include "mixing/mix_schedule.h"

namespace stoker {

class MixClock {
 public:
  // `schedule`: at least one entry. `step_tokens`: the tokens of one global step.
  MixClock(MixSchedule schedule, uint64_t step_tokens);

  // The tokens dataset `d` has earned in the steps before `step`.
  double Earned(uint32_t d, uint64_t step) const;

 private:
  // Sum of w_d(t) over t in [entry k's step, end), end at most the next entry's step.
  double SegmentSum(size_t k, uint32_t d, uint64_t end) const;

  MixSchedule schedule_;
  double step_tokens_;
  // Per entry k, per dataset: the sum of w_d(t) over the steps before entry k's step.
  std::vector<std::vector<double>> before_;
};

}  // namespace stoker

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
//
// A run resumed on another number of ranks has another step_tokens from its resume step on: its
// clock starts from a base, the tokens each dataset had earned at that step by the clock before
// (ClockBase), and earns at the new rate from there (and, for the steps before, as if the
// new rate had always held: only the order of units due then matters).
//
// DueStep turns tokens into the step by whose end a dataset has earned them: the lanes start
// units in the order of the steps they fall due at (mixing/lane.h). docs/design.md, "Epochs of
// the dataset", says what the loader does with it. Pure value type.
#pragma once

#include <cstdint>
#include <vector>

#include "mixing/mix_schedule.h"

namespace stoker {

// The tokens each dataset had earned at `step` (empty `earned`: none, at step 0).
struct ClockBase {
  uint64_t step = 0;
  std::vector<double> earned;
  bool operator==(const ClockBase&) const = default;
};

class MixClock {
 public:
  // `schedule`: at least one entry. `step_tokens`: the tokens of one global step.
  MixClock(MixSchedule schedule, uint64_t step_tokens, ClockBase base = {});

  // The tokens dataset `d` has earned in the steps before `step`.
  double Earned(uint32_t d, uint64_t step) const;
  // The first step by whose end dataset `d` has earned `tokens` (Earned(d, step + 1) >= tokens),
  // or UINT64_MAX when it never does (its weight ends at 0 first).
  uint64_t DueStep(uint32_t d, double tokens) const;
  // When within that step, at a steady rate: DueStep + the part of the step's earnings it takes
  // to reach `tokens`, in (DueStep, DueStep + 1] (0 when reached by step 0's start); infinity when
  // never. The order of these times is the order in which the datasets' units fall due.
  double DueTime(uint32_t d, double tokens) const;
  // The base of a clock of other step tokens from `step` on: what this one has earned there.
  ClockBase BaseAt(uint64_t step) const;

  const MixSchedule& schedule() const { return schedule_; }

 private:
  // Sum of w_d(t) over t in [entry k's step, end), end at most the next entry's step.
  double SegmentSum(size_t k, uint32_t d, uint64_t end) const;
  // Sum of w_d(t) over t < step.
  double WeightSum(uint32_t d, uint64_t step) const;

  MixSchedule schedule_;
  double step_tokens_;
  // Per entry k, per dataset: the sum of w_d(t) over the steps before entry k's step.
  std::vector<std::vector<double>> before_;
  ClockBase base_;
  std::vector<double> base_sums_;  // per dataset, WeightSum at the base's step
};

}  // namespace stoker

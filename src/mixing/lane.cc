#include "mixing/lane.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>

#include "base/check.h"

namespace stoker {

namespace {

// An early start leads its dataset's clock by at most this part of an epoch, while another unit
// can be started instead.
constexpr double kMostAhead = 0.5;

}  // namespace

Lane::Lane(uint32_t lane, uint32_t lanes, std::vector<LaneDataset> datasets, const MixClock& clock,
           LaneState state, LaneWalk* walk)
    : lane_(lane),
      lanes_(lanes),
      datasets_(std::move(datasets)),
      clock_(&clock),
      walk_(walk),
      state_(std::move(state)) {
  const auto n = static_cast<uint32_t>(datasets_.size());
  STOKER_ASSERT(lane_ < lanes_, "lane {} of {}", lane_, lanes_);
  STOKER_ASSERT(state_.dealers.size() == n && clock.schedule().datasets() == n,
                "a lane of {} datasets, {} dealer states, a clock of {}", n, state_.dealers.size(),
                clock.schedule().datasets());
  if (state_.started.empty()) state_.started.assign(n, 0);
  if (state_.earlier.empty()) state_.earlier.resize(n);
  STOKER_ASSERT(state_.earlier.size() == n, "earlier states of {} datasets for {}",
                state_.earlier.size(), n);
  for (uint32_t d = 0; d < n; ++d) {
    const LaneDataset& dataset = datasets_[d];
    if ((dataset.sizes.empty() && !dataset.walked) || !clock.schedule().EverPositive(d)) continue;
    STOKER_ASSERT(!dataset.walked || walk_ != nullptr, "walked dataset {} with no walk", d);
    STOKER_ASSERT(dataset.walked || state_.dealers[d].loads.size() == lanes_,
                  "dealer state of {} lanes for {}", state_.dealers[d].loads.size(), lanes_);
    read_.push_back(d);
    dealers_.emplace_back();
    if (!dataset.walked) {
      dealers_.back().emplace(dataset.sizes, dataset.key, state_.dealers[d]);
      if (state_.earlier[d].empty()) state_.earlier[d].push_back(state_.dealers[d]);
    }
    fronts_.emplace_back();
    const uint64_t tokens = dataset.tokens > 0 ? dataset.tokens
                                               : std::accumulate(dataset.sizes.begin(),
                                                                 dataset.sizes.end(), uint64_t{0});
    totals_.push_back(std::max<uint64_t>(tokens, 1));
    DealNext(d);
  }
  STOKER_ASSERT(!read_.empty(), "a lane with no dataset to read");
  // The units open fall due by this clock, which may be another than the one they started under
  // (other weights from the resumed step on, other lanes).
  for (OpenUnit& open : state_.open)
    open.unit.due = clock.DueTime(open.unit.dataset, End(open.unit));
  std::stable_sort(state_.open.begin(), state_.open.end(),
                   [](const OpenUnit& a, const OpenUnit& b) { return a.unit.due < b.unit.due; });
  visits_.assign(n, 0);
  ahead_.resize(read_.size());
  ahead_visits_.assign(read_.size(), 0);
}

Lane::Ahead Lane::LookAhead(uint32_t d) {
  const size_t i = Read(d);
  STOKER_ASSERT(i < read_.size() && dealers_[i], "looking ahead in dataset {}, not dealt here", d);
  if (!ahead_[i] || ahead_visits_[i] < visits_[d]) {  // from the lane's next unit of d
    ahead_[i] = *dealers_[i];
    ahead_visits_[i] = visits_[d];
  }
  Dealer& dealer = *ahead_[i];
  while (dealer.NextLane() != lane_) dealer.Next();
  return {.visit = ahead_visits_[i]++, .unit = dealer.Next()};
}

size_t Lane::Read(uint32_t d) const {
  return std::find(read_.begin(), read_.end(), d) - read_.begin();
}

const LaneState& Lane::state() const {
  for (size_t i = 0; i < read_.size(); ++i) {
    if (dealers_[i]) state_.dealers[read_[i]] = dealers_[i]->state();
  }
  return state_;
}

void Lane::DealNext(uint32_t d) {
  const size_t i = Read(d);
  Dealt dealt;
  if (datasets_[d].walked) {
    dealt = walk_->Peek(d);
    dealt.lane = lane_;
    dealt.start = lanes_ * state_.started[d];
    fronts_[i] = {.dataset = d, .dealt = dealt};
    fronts_[i].due = clock_->DueTime(d, End(fronts_[i]));
    return;
  }
  Dealer& dealer = *dealers_[i];
  const uint64_t units = datasets_[d].sizes.size();
  std::vector<DealerState>& earlier = state_.earlier[d];
  const auto note_epoch_start = [&] {
    const uint64_t position = dealer.state().position;
    if (position % units != 0 || (!earlier.empty() && earlier.back().position >= position)) return;
    earlier.push_back(dealer.state());
  };
  note_epoch_start();
  while (dealer.NextLane() != lane_) {
    dealer.Next();
    note_epoch_start();
  }
  dealt = dealer.Peek();  // dealt when it starts (Take): state() is then before it
  // Back to two epochs before this unit's: the oldest kept starts that epoch or lies before it.
  const uint64_t keep_from = dealt.epoch < 2 ? 0 : (dealt.epoch - 2) * units;
  while (earlier.size() > 1 && earlier[1].position <= keep_from) earlier.erase(earlier.begin());
  fronts_[i] = {.dataset = d, .dealt = dealt};
  fronts_[i].due = clock_->DueTime(d, End(fronts_[i]));
}

const std::vector<double>& Lane::WeightsAt(uint64_t step) const {
  if (weights_step_ != step || weights_.empty()) {
    weights_ = clock_->schedule().WeightsAt(step);
    weights_step_ = step;
  }
  return weights_;
}

double Lane::End(const LaneUnit& unit) const {
  const Dealt& dealt = unit.dealt;
  const uint64_t size = datasets_[unit.dataset].walked ? lanes_ * dealt.size : dealt.size;
  return static_cast<double>(dealt.start + size);
}

size_t Lane::First(uint64_t step, const std::vector<bool>& among) const {
  const std::vector<double>& weights = WeightsAt(step);
  // Least due time first; on a tie the larger weight, then the larger name hash.
  const auto order = [&](size_t i) {
    const uint32_t d = read_[i];
    return std::make_tuple(fronts_[i].due, -weights[d], ~datasets_[d].tie);
  };
  size_t first = SIZE_MAX;
  for (size_t i = 0; i < read_.size(); ++i) {
    if ((!among.empty() && !among[i]) || !(weights[read_[i]] > 0)) continue;
    if (first == SIZE_MAX || order(i) < order(first)) first = i;
  }
  return first;
}

size_t Lane::Early(uint64_t step, size_t first) const {
  // How far ahead of its dataset's clock a unit would be, in epochs of the dataset.
  std::vector<double> ahead(read_.size());
  std::vector<bool> earned_one(read_.size());
  const std::vector<double>& weights = WeightsAt(step);
  for (size_t i = 0; i < read_.size(); ++i) {
    const double earned = clock_->Earned(read_[i], step + 1);
    ahead[i] = std::max(0.0, End(fronts_[i]) - earned) / static_cast<double>(totals_[i]);
    // A walked unit is the lane's: every lane's part of the clock must have earned it.
    const uint64_t lanes = datasets_[read_[i]].walked ? lanes_ : 1;
    earned_one[i] =
        weights[read_[i]] > 0 && earned >= static_cast<double>(lanes * fronts_[i].dealt.size);
  }
  // Of the datasets that have earned a unit's tokens, the one least ahead, within half an epoch;
  // else, of those within half an epoch, the unit due first; else the unit due first.
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < read_.size(); ++i) {
    if (earned_one[i] && ahead[i] <= kMostAhead && (best == SIZE_MAX || ahead[i] < ahead[best])) {
      best = i;
    }
  }
  if (best != SIZE_MAX) return best;
  std::vector<bool> near(read_.size());
  for (size_t i = 0; i < read_.size(); ++i) near[i] = ahead[i] <= kMostAhead;
  best = First(step, near);
  return best != SIZE_MAX ? best : first;
}

LanePiece Lane::TakeOpen(size_t i, uint64_t step, uint64_t room) {
  OpenUnit& open = state_.open[i];
  const LanePiece piece{.unit = open.unit,
                        .first = open.done,
                        .count = std::min(room, open.unit.dealt.size - open.done)};
  open.done += piece.count;
  running_ = SIZE_MAX;
  if (open.done == open.unit.dealt.size) {
    state_.open.erase(state_.open.begin() + i);
  } else {
    running_ = i;
    running_step_ = step;
  }
  return piece;
}

LanePiece Lane::Take(uint64_t step, uint64_t room) {
  STOKER_ASSERT(room > 0, "a piece of no tokens");
  if (running_ != SIZE_MAX && running_step_ == step) return TakeOpen(running_, step, room);
  while (true) {
    // Of the datasets of a positive weight: due units first; then the open ones (of any weight);
    // then an early start.
    const size_t first = First(step, {});
    STOKER_ASSERT(first != SIZE_MAX || !state_.open.empty(),
                  "lane {}: no dataset of a positive weight at step {}", lane_, step);
    const bool due = first != SIZE_MAX && fronts_[first].due <= static_cast<double>(step + 1);
    if (!due && !state_.open.empty()) return TakeOpen(0, step, room);
    const LaneUnit unit = fronts_[due ? first : Early(step, first)];
    state_.started[unit.dataset] += unit.dealt.size;
    if (datasets_[unit.dataset].walked) {
      walk_->Advance(unit.dataset);
    } else {
      const Dealt dealt = dealers_[Read(unit.dataset)]->Next();
      STOKER_ASSERT(dealt == unit.dealt, "lane {} dealt position {}, not its next unit at {}",
                    lane_, dealt.position, unit.dealt.position);
    }
    ++visits_[unit.dataset];
    DealNext(unit.dataset);
    if (unit.dealt.size == 0) continue;
    const auto at =
        std::upper_bound(state_.open.begin(), state_.open.end(), unit.due,
                         [](double due, const OpenUnit& open) { return due < open.unit.due; });
    const size_t i = at - state_.open.begin();
    state_.open.insert(at, {.unit = unit});
    return TakeOpen(i, step, room);
  }
}

DealerState Redeal(std::span<const uint64_t> sizes, uint64_t key, const DealerState& from,
                   std::span<const uint64_t> positions, uint32_t lanes) {
  STOKER_ASSERT(!positions.empty() && lanes > 0 && from.loads.size() == positions.size(),
                "dealing {} lanes' units again to {} from a state of {}", positions.size(), lanes,
                from.loads.size());
  const uint64_t least = *std::min_element(positions.begin(), positions.end());
  const uint64_t most = *std::max_element(positions.begin(), positions.end());
  STOKER_ASSERT(from.position <= least, "dealing again from {}, past the least position {}",
                from.position, least);
  Dealer old(sizes, key, from);
  while (old.Peek().position < least) old.Next();
  // Every position before `at` was started; those from it to `least` are passed over.
  const DealerState at = old.state();
  // Every position of [least, most) that the old dealing gave a lane before that lane's next
  // unit was started by it; the positions passed over before stay passed over.
  std::vector<uint64_t> skip = at.skip;
  while (old.state().position < most) {
    const Dealt dealt = old.Next();
    if (dealt.position < positions[dealt.lane]) skip.push_back(dealt.position);
  }
  std::sort(skip.begin(), skip.end());
  skip.erase(std::unique(skip.begin(), skip.end()), skip.end());
  return {.position = at.position,
          .start = at.start,
          .loads = std::vector<uint64_t>(lanes, 0),
          .skip = std::move(skip)};
}

const DealerState* LatestAtOrBefore(std::span<const DealerState> states, uint64_t position) {
  const DealerState* latest = nullptr;
  for (const DealerState& state : states) {
    if (state.position <= position && (latest == nullptr || state.position > latest->position)) {
      latest = &state;
    }
  }
  return latest;
}

std::vector<uint64_t> DeliveredTokens(const LaneState& state, size_t datasets) {
  std::vector<uint64_t> tokens(datasets, 0);
  for (size_t d = 0; d < std::min(datasets, state.started.size()); ++d) {
    tokens[d] = state.started[d];
  }
  for (const OpenUnit& open : state.open) {
    STOKER_ASSERT(open.unit.dataset < datasets && open.done <= open.unit.dealt.size,
                  "an open unit of dataset {} ({} of {} tokens done) of {} datasets",
                  open.unit.dataset, open.done, open.unit.dealt.size, datasets);
    tokens[open.unit.dataset] -= open.unit.dealt.size - open.done;  // modulo 2^64: see lane.h
  }
  return tokens;
}

}  // namespace stoker

#include "order/dealer.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "base/check.h"
#include "order/random.h"

namespace stoker {

namespace {

using Entry = std::pair<uint64_t, uint32_t>;  // (load, lane)
constexpr std::greater<Entry> kLeastFirst;    // std::*_heap keep the greatest first otherwise

}  // namespace

DealerState FirstDealerState(uint32_t lanes) {
  STOKER_ASSERT(lanes > 0, "a dealer of no lane");
  return {.position = 0, .start = 0, .loads = std::vector<uint64_t>(lanes, 0)};
}

Dealer::Dealer(std::span<const uint64_t> sizes, uint64_t key, DealerState state)
    : sizes_(sizes),
      key_(key),
      total_(std::accumulate(sizes.begin(), sizes.end(), uint64_t{0})),
      state_(std::move(state)),
      order_(sizes.size(), DeriveKey(key, "epoch", 0)) {
  STOKER_ASSERT(!sizes_.empty(), "a dealer of no unit");
  STOKER_ASSERT(!state_.loads.empty() && state_.loads.size() <= UINT32_MAX, "a dealer of {} lanes",
                state_.loads.size());
  for (uint32_t lane = 0; lane < state_.loads.size(); ++lane) {
    heap_.emplace_back(state_.loads[lane], lane);
  }
  std::make_heap(heap_.begin(), heap_.end(), kLeastFirst);
}

const Permutation& Dealer::EpochOrder(uint64_t epoch) {
  if (epoch != order_epoch_) {
    order_ = Permutation(sizes_.size(), DeriveKey(key_, "epoch", epoch));
    order_epoch_ = epoch;
  }
  return order_;
}

Dealt Dealer::Peek() {
  const uint64_t units = sizes_.size();
  uint64_t position = state_.position, start = state_.start;
  const auto size_at = [&](uint64_t p) { return sizes_[EpochOrder(p / units).At(p % units)]; };
  for (uint64_t skipped : state_.skip) {
    if (skipped != position) break;
    start += size_at(position++);
  }
  Dealt dealt{.position = position, .epoch = position / units, .lane = heap_.front().second};
  dealt.unit = EpochOrder(dealt.epoch).At(position % units);
  dealt.size = sizes_[dealt.unit];
  dealt.start = start;
  return dealt;
}

Dealt Dealer::Next() {
  const uint64_t units = sizes_.size();
  Dealt dealt = Peek();
  // The positions before it were passed over: the first ones of `skip`.
  state_.skip.erase(state_.skip.begin(),
                    state_.skip.begin() + static_cast<ptrdiff_t>(dealt.position - state_.position));
  state_.position = dealt.position;
  state_.start = dealt.start;
  STOKER_ASSERT(state_.skip.empty() || state_.skip.front() > state_.position,
                "position {} to pass over, behind the dealer at {}", state_.skip.front(),
                state_.position);
  std::pop_heap(heap_.begin(), heap_.end(), kLeastFirst);
  Entry& least = heap_.back();
  dealt.lane = least.second;
  least.first += dealt.size;
  state_.loads[dealt.lane] = least.first;
  std::push_heap(heap_.begin(), heap_.end(), kLeastFirst);
  ++state_.position;
  state_.start += dealt.size;
  STOKER_ASSERT(state_.position % units != 0 || state_.start == state_.position / units * total_,
                "the stream's tokens {} at the end of epoch {} of {}", state_.start, dealt.epoch,
                total_);
  return dealt;
}

}  // namespace stoker

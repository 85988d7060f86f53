// Dealer: deals one dataset's stream of units to the lanes that read it (the data-parallel ranks),
// so that the lanes' loads never differ by more than the largest unit, and every rank computes
// every lane's part with no message.
//
// The stream is the dataset's units epoch after epoch: in epoch e the U units come in the order
// of a keyed permutation of that epoch, so position g = e * U + i of the stream holds unit
// Permutation(U, DeriveKey(key, "epoch", e)).At(i). A unit's size is its framed tokens (0 for a
// unit of empty documents). Position after position, each goes to the lane whose load (the
// tokens dealt to it so far) is least, the lower lane on a tie: list scheduling, under which
// the loads of any two lanes differ by at most the largest unit, whatever the sizes, however
// long the run. Each dealt unit also carries `start`, the stream's tokens before it (e * T plus
// the sizes before it in epoch e, T the sum of the sizes): where it lies in the dataset's stream,
// which every lane knows for each of its units.
//
// A state may name positions to pass over (`skip`): units some lane delivered before the lanes
// were dealt again (a resume on another number of lanes, mixing/lane.h); they go to no lane, and
// the stream's tokens go on past them.
//
// The state is a value (DealerState): saved and resumed as is, the same on every rank at the same
// position. Dealing one position costs O(log lanes).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "order/permutation.h"

namespace stoker {

struct DealerState {
  uint64_t position = 0;        // the next position of the stream to deal
  uint64_t start = 0;           // the stream's tokens before it
  std::vector<uint64_t> loads;  // per lane, the tokens dealt to it
  std::vector<uint64_t> skip;   // positions from `position` on to pass over, increasing
  bool operator==(const DealerState&) const = default;
};

// The state before the first position, for `lanes` lanes.
DealerState FirstDealerState(uint32_t lanes);

struct Dealt {
  uint64_t position = 0;  // in the stream
  uint64_t epoch = 0;
  uint64_t unit = 0;
  uint32_t lane = 0;
  uint64_t start = 0;  // the stream's tokens before this unit
  uint64_t size = 0;
  bool operator==(const Dealt&) const = default;
};

class Dealer {
 public:
  // `sizes`: the framed tokens of each unit, at least one unit; not owned, must outlive the
  // dealer. `key`: the dataset's order key.
  Dealer(std::span<const uint64_t> sizes, uint64_t key, DealerState state);

  // Deals the next position of the stream that is not passed over.
  Dealt Next();
  // What Next() would deal, without dealing it.
  Dealt Peek();
  // The lane that the next call of Next() deals to.
  uint32_t NextLane() const { return heap_.front().second; }

  const DealerState& state() const { return state_; }

 private:
  // The epoch order of `epoch`, made when the stream enters it.
  const Permutation& EpochOrder(uint64_t epoch);

  std::span<const uint64_t> sizes_;
  uint64_t key_;
  uint64_t total_ = 0;  // T, the sum of the sizes
  DealerState state_;
  // (load, lane), smallest first: the heap that list scheduling takes its lane from.
  std::vector<std::pair<uint64_t, uint32_t>> heap_;
  uint64_t order_epoch_ = 0;
  Permutation order_;
};

}  // namespace stoker

// Lane: the units one lane (a data-parallel rank) starts, one after another, of all the datasets
// it reads, and the dealing again of the datasets' streams when a run resumes on other lanes.
//
// Every dataset's stream of units (its documents, epoch after epoch) is dealt to the lanes
// (order/dealer.h); each lane deals every stream itself and keeps the units dealt to it, in
// stream order. A unit that begins C tokens into its dataset's stream and holds F framed tokens
// falls due when the dataset has earned C + F (MixClock::DueTime, a step and a part of it),
// and is due by step s if that is at or before s + 1, the end of step s. A lane fills
// the tokens of each step, piece by piece (Take):
//   1. it starts every unit of its that is due by the step, least due time first (on a tie the
//      dataset of larger weight at the step, then the larger hash of its name, never corpus
//      order), each run on until it ends or the step's tokens do;
//   2. then it goes on with the units it started and has not finished, least due time first;
//   3. when nothing is due or open and the step has room, it starts a unit early: of the
//      datasets that have earned at least the unit's tokens (a walked one: for every lane, the
//      lanes' number of times the unit's tokens), the one whose clock the unit would
//      lead by the least part of an epoch of the dataset, if by at most half of one; else, of the
//      units within half an epoch, the one due first; else the one due first.
// Only datasets of a positive weight at the step start units (a unit left open goes on whatever
// the weight): a weight of 0 gets no new unit, even where its clock is ahead of the lane.
// Since the dealing keeps the lanes' loads of each dataset within a unit of each other, and every
// lane delivers the same tokens per step, each dataset's units start over all lanes at about the
// steps they fall due, in stream order: the epochs belong to the dataset, not to a lane. A lane
// whose loads are short of the others' (by up to a unit of each dataset) starts early where that
// costs the least part of an epoch: in the large datasets. A dataset of weight w earns w of the
// tokens and starts no unit early before its share has earned that unit's tokens: a weight of
// 1e-9 gets nothing in a run shorter than a billion of its documents, and a weight that ramps up
// from 0 starts when its share has earned a unit. Where a step delivers several epochs of a
// dataset (a few short units at a large weight), a step can end with a spread of 3 or 4
// deliveries between its units: within a step each lane starts its due units in its own rows.
// docs/design.md, "Epochs of the dataset".
//
// The state (LaneState) is a value: a lane made from it delivers the same pieces. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "mixing/mix_clock.h"
#include "order/dealer.h"

namespace stoker {

// A dataset is dealt (its units' sizes known to every lane) or walked: too large for every lane
// to deal every unit, each lane takes its units from a walk of its own (LaneWalk: the logical
// shards its rank owns, WalkedUnits in packing/shard_walk.h), and they fall due when the dataset
// has earned `lanes` times the lane's own tokens of it, the unit's included. A walked dataset's
// units keep to its weight on every lane; its epochs are the walk's.
struct LaneDataset {
  std::span<const uint64_t> sizes;  // framed tokens per unit, not owned (walked: may be empty)
  bool walked = false;
  uint64_t tokens = 0;  // framed tokens of an epoch (0: the sum of `sizes`)
  uint64_t key = 0;     // the dataset's order key (Dealer)
  uint64_t tie = 0;     // a hash of its name: breaks ties after the weight
};

// The units of the walked datasets on one lane, in the order of the walk: Peek tells the next
// unit (its `unit`, `epoch`, `position` as the walk knows them and its framed `size`), Advance
// moves past it. Peek gives the same until Advance.
class LaneWalk {
 public:
  virtual ~LaneWalk() = default;
  virtual Dealt Peek(uint32_t dataset) = 0;
  virtual void Advance(uint32_t dataset) = 0;
};

struct LaneUnit {
  uint32_t dataset = 0;
  Dealt dealt;
  double due = 0;  // when it falls due (MixClock::DueTime)
  bool operator==(const LaneUnit&) const = default;
};

// A unit started and not finished: `done` of its dealt.size tokens delivered.
struct OpenUnit {
  LaneUnit unit;
  uint64_t done = 0;
  bool operator==(const OpenUnit&) const = default;
};

struct LaneState {
  // Per dataset dealt: a dealer state of its stream at or before this lane's next unit
  // (FirstDealerState, a saved one, or Redeal's); for a walked one, ignored.
  std::vector<DealerState> dealers;
  // Per dataset: the framed tokens of the units this lane started (empty: none); a walked
  // dataset's units fall due by it.
  std::vector<uint64_t> started;
  std::vector<OpenUnit> open;  // least due time first (a lane made from the state computes the
                               // due times again, by its own clock)
  // Per dataset dealt: earlier states of its stream, oldest first: the one the lane was first
  // made from, and those at the start of each epoch it dealt into, back to two epochs before its
  // next unit's. A resume on other lanes deals again from one at or before every lane's next
  // unit (Redeal): any rank file holds one while the lanes' next units lie within two epochs.
  std::vector<std::vector<DealerState>> earlier;
  bool operator==(const LaneState&) const = default;
};

// Per dataset (`datasets` of them): the framed tokens a lane of `state` delivered, the units it
// started less what its open ones have still to deliver, modulo 2^64. Summed over the lanes
// (modulo 2^64, as MPI sums unsigned integers), the tokens of every batch since step 0, whatever
// rescales came between: a rescale keeps the sums of started tokens and of open units, but may
// give a lane an open unit larger than its part of the started tokens, so one lane's figure alone
// means nothing then.
std::vector<uint64_t> DeliveredTokens(const LaneState& state, size_t datasets);

// Tokens [first, first + count) of a unit of dealt.size tokens, count > 0.
struct LanePiece {
  LaneUnit unit;
  uint64_t first = 0;
  uint64_t count = 0;
  bool operator==(const LanePiece&) const = default;
};

class Lane {
 public:
  // Lane `lane` of `lanes`. `clock` and `walk` (needed when a dataset is walked) outlive the
  // lane. A dataset is read when it has a positive weight at some step of the clock's schedule
  // and units (sizes, or walked).
  Lane(uint32_t lane, uint32_t lanes, std::vector<LaneDataset> datasets, const MixClock& clock,
       LaneState state, LaneWalk* walk = nullptr);

  // The next piece of step `step`, at most `room` tokens (room > 0): of the unit the rule above
  // gives, or of the one the last piece of the step cut short (a row's end within the step:
  // a unit runs on until it ends or the step does). Units of no tokens are passed over.
  LanePiece Take(uint64_t step, uint64_t room);

  // Per dataset the dealer's state before the lane's next unit (as given, for a dataset not
  // read), and the units open.
  const LaneState& state() const;

  // The units of dealt dataset `d` this lane will start, in order (it starts a dataset's units in
  // stream order): each call returns the one after the previous call's, or the lane's next unit
  // of `d` on the first call and once the lane has started what the calls returned. `visit` counts
  // the lane's units of `d` from construction on, so the unit is needed once visits(d) > visit. For
  // reading document offsets ahead. The first call for a dataset copies its dealer.
  struct Ahead {
    uint64_t visit = 0;
    Dealt unit;
  };
  Ahead LookAhead(uint32_t d);
  // The units of dataset `d` this lane started (or passed over, empty) since construction.
  uint64_t visits(uint32_t d) const { return visits_[d]; }

 private:
  // The index into read_ of dataset `d`.
  size_t Read(uint32_t d) const;
  // Deals `d`'s stream on to this lane's next unit of it, its front (not yet dealt).
  void DealNext(uint32_t d);
  // The tokens of its dataset's stream by whose earning `unit` falls due: where it ends, for a
  // walked one the lanes' number of times the lane's tokens with it.
  double End(const LaneUnit& unit) const;
  // The schedule's weights at `step` (kept for the step last asked).
  const std::vector<double>& WeightsAt(uint64_t step) const;
  // Of the datasets' next units (those `among` marks, all if empty), the one due first at `step`
  // (an index into read_; SIZE_MAX if none is marked).
  size_t First(uint64_t step, const std::vector<bool>& among) const;
  // The unit to start early at `step` (rule 3 above), `first` the one due first.
  size_t Early(uint64_t step, size_t first) const;
  // Takes up to `room` tokens of the open unit `i` at `step`, closing it when they are its last;
  // a unit cut short by `room` runs on at the next Take of the step.
  LanePiece TakeOpen(size_t i, uint64_t step, uint64_t room);

  uint32_t lane_;
  uint32_t lanes_;
  std::vector<LaneDataset> datasets_;
  const MixClock* clock_;
  LaneWalk* walk_;
  std::vector<uint32_t> read_;                  // the datasets read
  std::vector<std::optional<Dealer>> dealers_;  // per dataset read, in read_'s order, if dealt
  std::vector<LaneUnit> fronts_;                // per dataset read: the lane's next unit
  std::vector<uint64_t> totals_;                // per dataset read: the tokens of an epoch
  std::vector<uint64_t> visits_;                // per dataset
  // Per dataset read: LookAhead's copy of its dealer and the visit of its next unit.
  std::vector<std::optional<Dealer>> ahead_;
  std::vector<uint64_t> ahead_visits_;
  // Its dealers' states are those of dealers_ (up to date once state() is asked).
  mutable LaneState state_;
  // The open unit (index into state_.open) that a piece of step running_step_ cut short, if any.
  size_t running_ = SIZE_MAX;
  uint64_t running_step_ = 0;
  mutable std::vector<double> weights_;  // WeightsAt's, of weights_step_
  mutable uint64_t weights_step_ = 0;
};

// One dataset's dealer state that every lane of a run on `lanes` lanes starts from, after a run
// whose lane l saved a dealer state at `positions[l]` (its state().dealers[d].position, all at the
// same step): the stream dealt again from the least of them, passing over the units some lane had
// started beyond it (and those passed over before). `from`: a state of the old dealing at or
// before the least position (the least lane's own, or one of any lane's `earlier`), dealt on from
// there. Needs every old lane's position and one old state: a rescale moves a number per old lane
// and dataset. Every rank computes the same.
DealerState Redeal(std::span<const uint64_t> sizes, uint64_t key, const DealerState& from,
                   std::span<const uint64_t> positions, uint32_t lanes);

// Of `states`, the latest at or before `position` (nullptr if none is).
const DealerState* LatestAtOrBefore(std::span<const DealerState> states, uint64_t position);

}  // namespace stoker

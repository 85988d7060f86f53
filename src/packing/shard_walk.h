// ShardWalk: a rank's walk through each dataset's documents on the logical shards it owns.
//
// Within a dataset, from the rank's logical shards in turn, each cycle visiting every non-empty
// one once in a random order keyed by (seed, dataset, world, rank, generation, cycle); within a
// logical shard, from the next position of its slice of the epoch's order (DatasetOrder). A shard
// at the end of its slice wraps to its next epoch, on its own: a small dataset with a large
// weight is upsampled. Cycles pass over shards already ahead of the rank's least advanced one,
// so a rank visits all of its share of a dataset's epoch e before any document of epoch e + 1
// (slices differ by at most one document, so this costs at most one pass of skips per epoch).
//
// Where the walk stands lives in a RankState (the shards' cursors, the interleaving) and in a
// Position derived from it (per dataset the least epoch of its shards, how many are at it, and
// the documents visited); the walk holds only what never changes, so one walk serves several
// positions (a planner's rows and its look-ahead). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mixing/lane.h"
#include "order/order.h"
#include "packing/planner_config.h"
#include "state/loader_state.h"

namespace stoker {

class ShardWalk {
 public:
  // `state`: the rank's, for the shards it owns and its generation.
  ShardWalk(const PlannerConfig& config, const RankState& state);

  struct Position {
    std::vector<uint64_t> least_epoch;     // per dataset, of its shards with documents
    std::vector<uint64_t> at_least_epoch;  // per dataset, its shards at that epoch
    std::vector<uint64_t> visits;          // per dataset, NextShard calls since Start
  };
  // Where `state` stands, no visit made.
  Position Start(const RankState& state) const;

  // The shard of `dataset`'s next document, moving the interleaving on: a visit.
  uint64_t NextShard(RankState& state, Position& position, uint32_t dataset) const;
  // The shard NextShard would give, and the interleaving after it, with nothing moved.
  struct Turn {
    uint64_t shard = 0;
    InterleaveCursor after;
  };
  Turn NextTurn(const RankState& state, const Position& position, uint32_t dataset) const;
  // Makes `turn` (NextTurn's, nothing moved since): the visit NextShard makes.
  void TakeTurn(RankState& state, Position& position, uint32_t dataset, const Turn& turn) const;
  // The document the cursor of (shard, dataset) points at.
  uint64_t DocumentAt(const RankState& state, uint64_t shard, uint32_t dataset) const;
  // Moves the cursor of (shard, dataset) past its document.
  void Advance(RankState& state, Position& position, uint64_t shard, uint32_t dataset) const;

  // Whether the dataset has documents on the rank's shards, and how many.
  bool has_documents(uint32_t dataset) const { return !active_[dataset].empty(); }
  uint64_t rank_docs(uint32_t dataset) const { return rank_docs_[dataset]; }
  const std::vector<bool>& has_documents() const { return has_documents_; }

  // Throws the DataError of `skipped` empty documents of `dataset` in a row: past a bound of 64
  // times (its documents + the rank's share of an epoch), which chance passes with probability
  // about e^-64, so the corpus broke its promise (changed under the run). The order changes every
  // epoch, so every non-empty document comes to every rank in time.
  void CheckEmptyRun(uint64_t skipped, const PlannerConfig& config, uint32_t dataset) const;

 private:
  void FindLeastEpoch(const RankState& state, Position& position, uint32_t dataset) const;

  std::vector<DatasetOrder> orders_;
  std::vector<uint64_t>
      interleave_keys_;  // per dataset: from (seed, name, world, rank, generation)
  std::vector<std::vector<uint64_t>> active_;  // per dataset: owned shards with documents
  std::vector<uint64_t> rank_docs_;            // per dataset: documents in those shards
  std::vector<bool> has_documents_;            // per dataset: documents in those shards
};

// The walk as a lane's source of units for the datasets it walks (mixing/lane.h): a unit is the
// document the walk comes to next, `unit` its number, `position` its shard, `epoch` the shard's
// epoch, `size` its framed length (0 for an empty one, which the lane passes over). Peek moves
// nothing, so a state saved between Peek and Advance goes on the same; it keeps what it found
// for Advance (only Advance moves a dataset's walk while the lane runs).
class WalkedUnits : public LaneWalk {
 public:
  // Every pointer outlives this; `extra` the framing tokens a document gets (1 or 2). Advance
  // appends the index into state->cursors of the cursor it moves to `touched`, if given.
  WalkedUnits(const PlannerConfig* config, const ShardWalk* walk, RankState* state,
              ShardWalk::Position* position, const DocLocator* locate, uint64_t extra,
              std::vector<uint64_t>* touched = nullptr);
  Dealt Peek(uint32_t dataset) override;
  void Advance(uint32_t dataset) override;

 private:
  const PlannerConfig* config_;
  const ShardWalk* walk_;
  RankState* state_;
  ShardWalk::Position* position_;
  const DocLocator* locate_;
  uint64_t extra_;
  std::vector<uint64_t>* touched_;
  std::vector<uint64_t> empties_;  // per dataset: empty documents passed in a row
  // Per dataset: what Peek found (its turn of the interleaving, the unit), until Advance.
  struct Peeked {
    ShardWalk::Turn turn;
    Dealt unit;
  };
  std::vector<std::optional<Peeked>> peeked_;
};

}  // namespace stoker

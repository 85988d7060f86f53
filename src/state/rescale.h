// Rescaling the loader's state from W ranks to W' ranks. Pure: the MPI restore and the offline
// `stoker reshard` both go through these two functions, so they give the same states bit for bit.
//
// Every old rank's checkpoint is split into one RescalePart for each new rank that will own some
// of its logical shards (a contiguous run of shards goes to each: usually one to three parts):
// the cursors of those shards, the documents open in them (the lane's open units, and a format
// 1-4 file's unfinished documents, in their old order), the old rank's step, generation and
// clock, and the share of its started tokens that goes with those shards (split in proportion to
// shard counts, so that every sum is kept exactly). A dataset dealt to the ranks is tied to no
// shard: every new rank gets every old lane's position in it and one state of the old dealing at
// or before them, with which its planner deals the stream again (RankState::redeal), and its
// open documents go to the new ranks in turn (with a dealt dataset every old rank sends a part to
// every new rank: W x W' parts of a few numbers a dealt dataset; from a state still to be dealt
// again, each new rank gets the old lanes' positions once). A new rank assembles its state
// from the parts it receives: its shards' cursors as they stood, the step and clock, the generation
// plus one (a new interleaving), the open documents in (old rank, old order) order (each goes on
// from where it stood), and the summed started tokens, by which its walk of each dataset keeps to
// the weights from there. Nothing is lost and nothing is repeated; the work is linear in W + W'.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "state/loader_state.h"

namespace stoker {

struct RescalePart {
  uint64_t old_rank = 0;
  uint64_t new_rank = 0;
  uint64_t step = 0;
  uint64_t generation = 0;
  ClockBase clock;
  uint64_t step_tokens = 0;
  std::vector<uint64_t> started;          // the share of the old rank's started tokens, per dataset
  std::vector<uint64_t> shards;           // logical shards whose cursors follow
  std::vector<ShardCursor> cursors;       // shards.size() * datasets, shard after shard
  std::vector<OpenUnit> open;             // of those shards, in the old rank's order (and of dealt
                                          // datasets: to the new ranks in turn)
  std::vector<UnfinishedDoc> unfinished;  // the same, from a file of format 1 to 4
  // Per dataset, for one dealt to the ranks (else empty): the (old lane, position) pairs this
  // part knows (the old rank's own, and in the part for new rank k from old rank k mod W a state
  // of the old dealing at or before the old lanes' positions, its oldest earlier one, to deal
  // again from; or, from a state still to be dealt again, all of them and its state to deal from,
  // only in the part from the old rank that owns the new rank's first logical shard).
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> positions;
  std::vector<std::optional<DealerState>> from;
  bool operator==(const RescalePart&) const = default;
};

// Splits old rank `old_rank`'s state into parts for the ranks of `new_world` that will own its
// shards, by increasing new rank.
std::vector<RescalePart> SplitState(const RankState& old, uint64_t old_rank,
                                    uint64_t logical_shards, uint64_t new_world);

// Rank `new_rank`'s state from every part made for it (any order). Throws DataError when the
// parts do not cover its shards exactly once or disagree on the step or the clock.
RankState AssembleState(std::vector<RescalePart> parts, uint64_t datasets, uint64_t logical_shards,
                        uint64_t new_world, uint64_t new_rank);

std::string EncodeRescalePart(const RescalePart& part);
RescalePart DecodeRescalePart(const std::string& bytes);

}  // namespace stoker

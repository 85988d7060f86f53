// Rescaling the loader's state from W ranks to W' ranks. Pure: the MPI restore and the offline
// `stoker reshard` both go through these two functions, so they give the same states bit for bit.
//
// Every old rank's checkpoint is split into one RescalePart per new rank: the cursors of the
// logical shards the new rank will own (with the documents left unfinished in them, in their old
// order), plus the old rank's step, generation and mixing counters (every new rank gets every old
// rank's counters). A new rank assembles its state from the parts of all old ranks: its shards'
// cursors as they stood (a document cut by a row's end goes on from where it stood), the step,
// the generation plus one (a new interleaving), the unfinished documents in (old rank, old order)
// order, and its share of the summed mixing counters (split in proportion to its shards, so that
// the sums are kept exactly). Nothing is lost and nothing is repeated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/loader_state.h"

namespace stoker {

struct RescalePart {
  uint64_t old_rank = 0;
  uint64_t step = 0;
  uint64_t generation = 0;
  std::vector<uint64_t> delivered;  // the old rank's counters, per dataset
  std::vector<uint64_t> shards;     // logical shards whose cursors follow
  std::vector<ShardCursor> cursors; // shards.size() * datasets, shard after shard
  std::vector<UnfinishedDoc> unfinished;  // in the old rank's order
  bool operator==(const RescalePart&) const = default;
};

// Splits old rank `old_rank`'s state into one part per rank of `new_world`.
std::vector<RescalePart> SplitState(const RankState& old, uint64_t old_rank,
                                    uint64_t logical_shards, uint64_t new_world);

// Rank `new_rank`'s state from the parts every old rank made for it (any order). Throws
// DataError when the parts do not cover its shards exactly once or disagree on the step.
RankState AssembleState(std::vector<RescalePart> parts, uint64_t datasets,
                        uint64_t logical_shards, uint64_t new_world, uint64_t new_rank);

std::string EncodeRescalePart(const RescalePart& part);
RescalePart DecodeRescalePart(const std::string& bytes);

}  // namespace stoker

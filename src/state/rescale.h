// Rescaling the loader's state from W ranks to W' ranks. Pure: the MPI restore and the offline
// `stoker reshard` both go through these two functions, so they give the same states bit for bit.
//
// Every old rank's checkpoint is split into one RescalePart for each new rank that will own some
// of its logical shards (a contiguous run of shards goes to each: usually one to three parts):
// the cursors of those shards, the documents left unfinished in them (in their old order), the
// old rank's step and generation, and the share of its mixing counters that goes with those
// shards (split in proportion to shard counts: the counts of started tokens so that every sum is
// kept exactly, the mixer's deficits as fractions of theirs). A new rank
// assembles its state from the parts it receives: its shards' cursors as they stood (a document
// cut by a row's end goes on from where it stood), the step, the generation plus one (a new
// interleaving), the unfinished documents in (old rank, old order) order, and the summed
// counters. Nothing is lost and nothing is repeated; the work is linear in W + W'.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "state/loader_state.h"

namespace stoker {

struct RescalePart {
  uint64_t old_rank = 0;
  uint64_t new_rank = 0;
  uint64_t step = 0;
  uint64_t generation = 0;
  std::vector<uint64_t> delivered;  // the share of the old rank's counters, per dataset
  std::vector<double> deficit;      // the share of the old rank's deficits, per dataset
  std::vector<uint64_t> shards;     // logical shards whose cursors follow
  std::vector<ShardCursor> cursors; // shards.size() * datasets, shard after shard
  std::vector<UnfinishedDoc> unfinished;  // in the old rank's order
  bool operator==(const RescalePart&) const = default;
};

// Splits old rank `old_rank`'s state into parts for the ranks of `new_world` that will own its
// shards, by increasing new rank.
std::vector<RescalePart> SplitState(const RankState& old, uint64_t old_rank,
                                    uint64_t logical_shards, uint64_t new_world);

// Rank `new_rank`'s state from every part made for it (any order). Throws DataError when the
// parts do not cover its shards exactly once or disagree on the step.
RankState AssembleState(std::vector<RescalePart> parts, uint64_t datasets,
                        uint64_t logical_shards, uint64_t new_world, uint64_t new_rank);

std::string EncodeRescalePart(const RescalePart& part);
RescalePart DecodeRescalePart(const std::string& bytes);

}  // namespace stoker

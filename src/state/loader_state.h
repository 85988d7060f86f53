// The loader's resumable state on one rank: a plain value type (copyable, comparable).
//
// It is the position after the last batch handed to the trainer, made of cursors, never tokens:
//   per owned logical shard and dataset: the epoch and the position in that epoch's order of the
//     shard's slice (the next document the rank's walk comes to there);
//   per rank: the step, where the interleaving of the rank's logical shards stands (cycle,
//     index), and the rank's lane (mixing/lane.h): per dataset the framed tokens of the documents
//     started and the dealer's state, and the documents started and not finished (open units,
//     with the tokens of each already delivered);
//   the mixing clock's base (mixing/mix_clock.h): what each dataset had earned at a step, and the
//     tokens of a global step the clock earns at from there.
// Tokens are counted in framed units: a document of n tokens delivers n + 1 with its EOS, n + 2
// with BOS as well.
//
// A state read from a checkpoint of format 1 to 4 holds its unfinished documents the old way
// (`unfinished`: the cursor points at the document, its offset the tokens delivered) and no clock
// (step_tokens 0); the planner opens them as units when it starts (packing/row_planner.h).
#pragma once

#include <cstdint>
#include <vector>

#include "mixing/lane.h"
#include "mixing/mix_clock.h"
#include "order/partition.h"

namespace stoker {

struct ShardCursor {
  uint64_t epoch = 0;
  uint64_t position = 0;  // within the shard's slice of the epoch's order
  uint64_t offset = 0;    // format 1 to 4 only: framed tokens of the document at `position`
                          // already delivered
  bool operator==(const ShardCursor&) const = default;
};

struct InterleaveCursor {
  uint64_t cycle = 0;  // which random visiting order of the rank's shards
  uint64_t index = 0;  // how far into it
  bool operator==(const InterleaveCursor&) const = default;
};

// A document a checkpoint of format 1 to 4 left unfinished: the cursor of (shard, dataset)
// points at it, offset > 0.
struct UnfinishedDoc {
  uint32_t dataset = 0;
  uint64_t shard = 0;
  bool operator==(const UnfinishedDoc&) const = default;
};

struct RankState {
  uint64_t step = 0;        // batches delivered so far (the global step)
  uint64_t generation = 0;  // rescales so far; keys the interleaving
  uint64_t datasets = 0;
  IndexRange shards;                         // the logical shards this rank owns
  std::vector<ShardCursor> cursors;          // (shard - shards.begin) * datasets + dataset
  std::vector<InterleaveCursor> interleave;  // per dataset
  LaneState lane;  // started: per dataset, framed tokens of the documents started
  ClockBase clock;
  uint64_t step_tokens = 0;  // of a global step, at which the clock earns from its base (0: none)
  std::vector<UnfinishedDoc> unfinished;  // format 1 to 4 only, in the order to finish them
  // Per dataset (or none at all): after a rescale, the positions of the old lanes of a dealt
  // dataset (one per old lane), to deal its stream again from lane.dealers[d], a state of the
  // old dealing at or before the least of them (mixing/lane.h, Redeal); the planner does so
  // when it starts. Empty otherwise.
  std::vector<std::vector<uint64_t>> redeal;

  ShardCursor& cursor(uint64_t shard, uint32_t dataset) {
    return cursors[(shard - shards.begin) * datasets + dataset];
  }
  const ShardCursor& cursor(uint64_t shard, uint32_t dataset) const {
    return cursors[(shard - shards.begin) * datasets + dataset];
  }
  bool operator==(const RankState&) const = default;
};

// What changed in a RankState over some rows: the cursors touched (by index into `cursors`, with
// their new values) and the small per-rank parts whole. The loader's reading thread plans ahead;
// each batch carries its delta, and the trainer's thread applies it when it takes the batch, so
// that it always holds the state after the last batch it took, at a cost that does not grow with
// the number of logical shards.
struct StateDelta {
  std::vector<std::pair<uint64_t, ShardCursor>> cursors;
  uint64_t step = 0;
  std::vector<InterleaveCursor> interleave;
  LaneState lane;
  std::vector<UnfinishedDoc> unfinished;
  std::vector<std::vector<uint64_t>> redeal;
};

void ApplyDelta(const StateDelta& delta, RankState* state);

// The state of rank `rank` of `world` at the start of a run.
RankState InitialRankState(uint64_t datasets, uint64_t logical_shards, uint64_t world,
                           uint64_t rank);

}  // namespace stoker

// The loader's resumable state on one rank: a plain value type (copyable, comparable).
//
// It is the position after the last batch handed to the trainer, made of cursors, never tokens:
//   per owned logical shard and dataset: the epoch, the position in that epoch's order of the
//     shard's slice, and how many tokens of the document at that position were already delivered
//     (offset > 0 only for a document cut by the end of a row);
//   per rank: the step, per dataset the framed tokens of the documents started and the mixer's
//     deficit (mixing/mixer.h), and where the interleaving of the rank's logical shards stands
//     (cycle, index);
//   the documents left unfinished at a row's end, in the order they are to be finished (one at
//     most in a run that never rescaled; more after shards of several ranks came together).
// Tokens are counted in framed units: a document of n tokens delivers n + 1 with its EOS, n + 2
// with BOS as well.
#pragma once

#include <cstdint>
#include <vector>

#include "order/partition.h"

namespace stoker {

struct ShardCursor {
  uint64_t epoch = 0;
  uint64_t position = 0;  // within the shard's slice of the epoch's order
  uint64_t offset = 0;    // framed tokens of the document at `position` already delivered
  bool operator==(const ShardCursor&) const = default;
};

struct InterleaveCursor {
  uint64_t cycle = 0;  // which random visiting order of the rank's shards
  uint64_t index = 0;  // how far into it
  bool operator==(const InterleaveCursor&) const = default;
};

// A document left unfinished: the cursor of (shard, dataset) points at it, offset > 0.
struct UnfinishedDoc {
  uint32_t dataset = 0;
  uint64_t shard = 0;
  bool operator==(const UnfinishedDoc&) const = default;
};

struct RankState {
  uint64_t step = 0;        // batches delivered so far (the global step)
  uint64_t generation = 0;  // rescales so far; keys the interleaving
  uint64_t datasets = 0;
  IndexRange shards;        // the logical shards this rank owns
  std::vector<ShardCursor> cursors;          // (shard - shards.begin) * datasets + dataset
  std::vector<uint64_t> delivered;           // per dataset, framed tokens of documents started
  std::vector<double> deficit;               // per dataset, the mixer's (mixing/mixer.h)
  std::vector<InterleaveCursor> interleave;  // per dataset
  std::vector<UnfinishedDoc> unfinished;

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
  std::vector<uint64_t> delivered;
  std::vector<double> deficit;
  std::vector<InterleaveCursor> interleave;
  std::vector<UnfinishedDoc> unfinished;
};

void ApplyDelta(const StateDelta& delta, RankState* state);

// The state of rank `rank` of `world` at the start of a run.
RankState InitialRankState(uint64_t datasets, uint64_t logical_shards, uint64_t world,
                           uint64_t rank);

}  // namespace stoker

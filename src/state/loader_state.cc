#include "state/loader_state.h"

namespace stoker {

RankState InitialRankState(uint64_t datasets, uint64_t logical_shards, uint64_t world,
                           uint64_t rank) {
  RankState state;
  state.datasets = datasets;
  state.shards = OwnedLogicalShards(logical_shards, world, rank);
  state.cursors.resize(state.shards.size() * datasets);
  state.interleave.resize(datasets);
  state.lane.dealers.resize(datasets);  // every dataset walked
  state.lane.started.resize(datasets);
  state.lane.earlier.resize(datasets);
  return state;
}

void ApplyDelta(const StateDelta& delta, RankState* state) {
  for (const auto& [index, cursor] : delta.cursors) state->cursors[index] = cursor;
  state->step = delta.step;
  state->interleave = delta.interleave;
  state->lane = delta.lane;
  state->unfinished = delta.unfinished;
  state->redeal = delta.redeal;
}

}  // namespace stoker

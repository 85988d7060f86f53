#include "packing/shard_walk.h"

#include "base/check.h"
#include "order/permutation.h"
#include "order/random.h"

namespace stoker {

ShardWalk::ShardWalk(const PlannerConfig& config, const RankState& state) {
  const auto n = static_cast<uint32_t>(config.datasets.size());
  active_.resize(n);
  rank_docs_.resize(n);
  has_documents_.resize(n);
  for (uint32_t d = 0; d < n; ++d) {
    const std::string& name = config.datasets[d].name;
    orders_.emplace_back(config.seed, name, config.datasets[d].docs, config.logical_shards);
    interleave_keys_.push_back(DeriveKey(config.seed, "interleave:" + name,
                                         (config.world << 32) | config.rank, state.generation));
    for (uint64_t j = state.shards.begin; j < state.shards.end; ++j) {
      const uint64_t size = orders_[d].Slice(j).size();
      if (size == 0) continue;
      active_[d].push_back(j);
      rank_docs_[d] += size;
    }
    has_documents_[d] = !active_[d].empty();
  }
}

ShardWalk::Position ShardWalk::Start(const RankState& state) const {
  const size_t n = orders_.size();
  Position position{.least_epoch = std::vector<uint64_t>(n),
                    .at_least_epoch = std::vector<uint64_t>(n),
                    .visits = std::vector<uint64_t>(n)};
  for (uint32_t d = 0; d < n; ++d) FindLeastEpoch(state, position, d);
  return position;
}

void ShardWalk::FindLeastEpoch(const RankState& state, Position& position, uint32_t dataset) const {
  position.least_epoch[dataset] = UINT64_MAX;
  position.at_least_epoch[dataset] = 0;
  for (uint64_t shard : active_[dataset]) {
    const uint64_t epoch = state.cursor(shard, dataset).epoch;
    if (epoch < position.least_epoch[dataset]) {
      position.least_epoch[dataset] = epoch;
      position.at_least_epoch[dataset] = 0;
    }
    if (epoch == position.least_epoch[dataset]) ++position.at_least_epoch[dataset];
  }
}

ShardWalk::Turn ShardWalk::NextTurn(const RankState& state, const Position& position,
                                    uint32_t dataset) const {
  const auto& active = active_[dataset];
  STOKER_ASSERT(!active.empty(), "walking dataset {}, which has no documents here", dataset);
  Turn turn{.after = state.interleave[dataset]};
  InterleaveCursor& at = turn.after;
  while (true) {
    const uint64_t key = DeriveKey(interleave_keys_[dataset], "cycle", at.cycle);
    turn.shard = active[Permutation(active.size(), key).At(at.index)];
    if (++at.index == active.size()) {
      ++at.cycle;
      at.index = 0;
    }
    if (state.cursor(turn.shard, dataset).epoch == position.least_epoch[dataset]) return turn;
  }
}

uint64_t ShardWalk::NextShard(RankState& state, Position& position, uint32_t dataset) const {
  const Turn turn = NextTurn(state, position, dataset);
  TakeTurn(state, position, dataset, turn);
  return turn.shard;
}

void ShardWalk::TakeTurn(RankState& state, Position& position, uint32_t dataset,
                         const Turn& turn) const {
  state.interleave[dataset] = turn.after;
  ++position.visits[dataset];
}

void ShardWalk::CheckEmptyRun(uint64_t skipped, const PlannerConfig& config,
                              uint32_t dataset) const {
  constexpr uint64_t kSkipBound = 64;
  const uint64_t docs = config.datasets[dataset].docs;
  STOKER_CHECK(skipped < kSkipBound * (docs + rank_docs_[dataset]), DataError,
               "rank {} of {} passed over {} empty documents of dataset {} in a row ({} "
               "epochs of its share) without a non-empty one; its {} documents hold no token "
               "this rank can reach (did the corpus change under the run?)",
               config.rank, config.world, skipped, config.datasets[dataset].name,
               skipped / rank_docs_[dataset], docs);
}

uint64_t ShardWalk::DocumentAt(const RankState& state, uint64_t shard, uint32_t dataset) const {
  const ShardCursor& cursor = state.cursor(shard, dataset);
  const uint64_t position = orders_[dataset].Slice(shard).begin + cursor.position;
  return orders_[dataset].Epoch(cursor.epoch).At(position);
}

void ShardWalk::Advance(RankState& state, Position& position, uint64_t shard,
                        uint32_t dataset) const {
  ShardCursor& cursor = state.cursor(shard, dataset);
  cursor.offset = 0;
  if (++cursor.position == orders_[dataset].Slice(shard).size()) {
    cursor.position = 0;
    if (cursor.epoch++ == position.least_epoch[dataset] &&
        --position.at_least_epoch[dataset] == 0) {
      FindLeastEpoch(state, position, dataset);
    }
  }
}

WalkedUnits::WalkedUnits(const PlannerConfig* config, const ShardWalk* walk, RankState* state,
                         ShardWalk::Position* position, const DocLocator* locate, uint64_t extra,
                         std::vector<uint64_t>* touched)
    : config_(config),
      walk_(walk),
      state_(state),
      position_(position),
      locate_(locate),
      extra_(extra),
      touched_(touched),
      empties_(config->datasets.size(), 0),
      peeked_(config->datasets.size()) {}

Dealt WalkedUnits::Peek(uint32_t dataset) {
  std::optional<Peeked>& peeked = peeked_[dataset];
  if (peeked) return peeked->unit;
  const ShardWalk::Turn turn = walk_->NextTurn(*state_, *position_, dataset);
  const uint64_t doc = walk_->DocumentAt(*state_, turn.shard, dataset);
  const uint64_t length = (*locate_)(dataset, doc).length;
  peeked = Peeked{.turn = turn,
                  .unit = {.position = turn.shard,
                           .epoch = state_->cursor(turn.shard, dataset).epoch,
                           .unit = doc,
                           .size = length == 0 ? 0 : length + extra_}};
  return peeked->unit;
}

void WalkedUnits::Advance(uint32_t dataset) {
  Peek(dataset);  // the unit passed: what Peek found, the interleaving moved on as it said
  const Peeked peeked = *peeked_[dataset];
  peeked_[dataset].reset();
  walk_->TakeTurn(*state_, *position_, dataset, peeked.turn);
  const uint64_t shard = peeked.turn.shard;
  if (peeked.unit.size == 0) {
    walk_->CheckEmptyRun(++empties_[dataset], *config_, dataset);
  } else {
    empties_[dataset] = 0;
  }
  walk_->Advance(*state_, *position_, shard, dataset);
  if (touched_ != nullptr) {
    touched_->push_back((shard - state_->shards.begin) * state_->datasets + dataset);
  }
}

}  // namespace stoker

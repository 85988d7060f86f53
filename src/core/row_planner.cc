#include "core/row_planner.h"

#include <algorithm>

#include "base/check.h"
#include "core/random.h"

namespace stoker {

namespace {

std::vector<double> WeightsOf(const std::vector<PlannerDataset>& datasets) {
  std::vector<double> weights;
  for (const auto& d : datasets) weights.push_back(d.weight);
  return weights;
}

}  // namespace

RowPlanner::RowPlanner(PlannerConfig config, RankState state, DocLocator locate)
    : config_(std::move(config)),
      state_(std::move(state)),
      locate_(std::move(locate)),
      mixer_(WeightsOf(config_.datasets)),
      extra_(config_.bos ? 2 : 1) {
  const auto n = static_cast<uint32_t>(config_.datasets.size());
  STOKER_ASSERT(state_.datasets == n && state_.delivered.size() == n &&
                    state_.interleave.size() == n,
                "state of {} datasets for {}", state_.datasets, n);
  STOKER_ASSERT(config_.row_tokens > 0, "rows of 0 tokens");
  active_.resize(n);
  rank_docs_.resize(n);
  available_.resize(n);
  least_epoch_.resize(n);
  at_least_epoch_.resize(n);
  for (uint32_t d = 0; d < n; ++d) {
    const std::string& name = config_.datasets[d].name;
    orders_.emplace_back(config_.seed, name, config_.datasets[d].docs, config_.logical_shards);
    interleave_keys_.push_back(DeriveKey(config_.seed, "interleave:" + name,
                                         (config_.world << 32) | config_.rank, state_.generation));
    for (uint64_t j = state_.shards.begin; j < state_.shards.end; ++j) {
      const uint64_t size = orders_[d].Slice(j).size();
      if (size == 0) continue;
      active_[d].push_back(j);
      rank_docs_[d] += size;
    }
    available_[d] = !active_[d].empty() && config_.datasets[d].weight > 0;
    FindLeastEpoch(d);
  }
}

void RowPlanner::NextRow(std::vector<Segment>* row) {
  row->clear();
  uint64_t remaining = config_.row_tokens;
  while (remaining > 0) {
    if (state_.unfinished.empty()) StartNextDocument();
    const UnfinishedDoc doc = state_.unfinished.front();
    ShardCursor& cursor = Touch(doc.shard, doc.dataset);
    const uint64_t position = orders_[doc.dataset].Slice(doc.shard).begin + cursor.position;
    const uint64_t number = orders_[doc.dataset].Epoch(cursor.epoch).At(position);
    const DocSpan span = locate_(doc.dataset, number);
    const uint64_t framed = framed_length(span.length);
    STOKER_ASSERT(cursor.offset < framed, "offset {} into a document of {} framed tokens",
                  cursor.offset, framed);
    const uint64_t take = std::min(framed - cursor.offset, remaining);
    row->push_back({doc.dataset, number, span, cursor.offset, take, doc.shard, cursor.epoch});
    cursor.offset += take;
    remaining -= take;
    if (cursor.offset == framed) {
      Advance(doc.shard, doc.dataset);
      state_.unfinished.erase(state_.unfinished.begin());
    }
  }
}

void RowPlanner::StartNextDocument() {
  const auto dataset = mixer_.Pick(state_.delivered, available_);
  STOKER_CHECK(dataset.has_value(), DataError,
               "rank {} of {} has no documents to read: every dataset of positive weight is "
               "empty on its {} logical shards",
               config_.rank, config_.world, state_.shards.size());
  StartDocumentOf(*dataset);
}

// Starts the next non-empty document of `dataset` on this rank, passing over empty ones, into
// the rank's next epochs of the dataset if need be: the rank's share of one epoch may hold only
// empty documents, but the order changes every epoch, so every non-empty document comes to
// every rank in time (set-up refuses a dataset of positive weight without tokens). Nothing but
// the state decides, so a resumed run passes over the same documents. Expected skips are about
// the dataset's documents over its non-empty ones; the bound, kSkipBound times (the dataset's
// documents + the rank's share of an epoch), is passed by chance with probability about
// e^-kSkipBound, so reaching it means the corpus broke its promise (changed under the loader)
// and is an error, not a loop without end.
void RowPlanner::StartDocumentOf(uint32_t dataset) {
  constexpr uint64_t kSkipBound = 64;
  const uint64_t docs = config_.datasets[dataset].docs;
  for (uint64_t skipped = 0;; ++skipped) {
    STOKER_CHECK(skipped < kSkipBound * (docs + rank_docs_[dataset]), DataError,
                 "rank {} of {} passed over {} empty documents of dataset {} in a row ({} "
                 "epochs of its share) without a non-empty one; its {} documents hold no token "
                 "this rank can reach (did the corpus change under the run?)",
                 config_.rank, config_.world, skipped, config_.datasets[dataset].name,
                 skipped / rank_docs_[dataset], docs);
    const uint64_t shard = NextShard(dataset);
    const ShardCursor& cursor = state_.cursor(shard, dataset);
    const uint64_t position = orders_[dataset].Slice(shard).begin + cursor.position;
    const uint64_t number = orders_[dataset].Epoch(cursor.epoch).At(position);
    const uint64_t framed = framed_length(locate_(dataset, number).length);
    if (framed == 0) {
      Advance(shard, dataset);
      continue;
    }
    state_.delivered[dataset] += framed;
    state_.unfinished.push_back({dataset, shard});
    return;
  }
}

void RowPlanner::FindLeastEpoch(uint32_t dataset) {
  least_epoch_[dataset] = UINT64_MAX;
  at_least_epoch_[dataset] = 0;
  for (uint64_t shard : active_[dataset]) {
    const uint64_t epoch = state_.cursor(shard, dataset).epoch;
    if (epoch < least_epoch_[dataset]) {
      least_epoch_[dataset] = epoch;
      at_least_epoch_[dataset] = 0;
    }
    if (epoch == least_epoch_[dataset]) ++at_least_epoch_[dataset];
  }
}

uint64_t RowPlanner::NextShard(uint32_t dataset) {
  const auto& active = active_[dataset];
  InterleaveCursor& at = state_.interleave[dataset];
  while (true) {
    const uint64_t key = DeriveKey(interleave_keys_[dataset], "cycle", at.cycle);
    const uint64_t shard = active[Permutation(active.size(), key).At(at.index)];
    if (++at.index == active.size()) {
      ++at.cycle;
      at.index = 0;
    }
    if (state_.cursor(shard, dataset).epoch == least_epoch_[dataset]) return shard;
  }
}

ShardCursor& RowPlanner::Touch(uint64_t shard, uint32_t dataset) {
  touched_.push_back((shard - state_.shards.begin) * state_.datasets + dataset);
  return state_.cursor(shard, dataset);
}

StateDelta RowPlanner::TakeDelta() {
  StateDelta delta{.step = state_.step, .delivered = state_.delivered,
                   .interleave = state_.interleave, .unfinished = state_.unfinished};
  std::sort(touched_.begin(), touched_.end());
  touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  for (uint64_t index : touched_) delta.cursors.emplace_back(index, state_.cursors[index]);
  touched_.clear();
  return delta;
}

void RowPlanner::Advance(uint64_t shard, uint32_t dataset) {
  ShardCursor& cursor = Touch(shard, dataset);
  cursor.offset = 0;
  if (++cursor.position == orders_[dataset].Slice(shard).size()) {
    cursor.position = 0;
    if (cursor.epoch++ == least_epoch_[dataset] && --at_least_epoch_[dataset] == 0) {
      FindLeastEpoch(dataset);
    }
  }
}

}  // namespace stoker

#include "packing/row_planner.h"

#include <algorithm>

#include "base/check.h"
#include "order/random.h"

namespace stoker {

RowPlanner::RowPlanner(PlannerConfig config, RankState state, DocLocator locate)
    : config_(std::move(config)),
      walk_{.state = std::move(state)},
      locate_(std::move(locate)),
      extra_(config_.bos ? 2 : 1) {
  const RankState& s = walk_.state;
  const auto n = static_cast<uint32_t>(config_.datasets.size());
  STOKER_ASSERT(s.datasets == n && s.delivered.size() == n && s.deficit.size() == n &&
                    s.interleave.size() == n && config_.schedule.datasets() == n,
                "state of {} datasets for {}", s.datasets, n);
  STOKER_ASSERT(config_.row_tokens > 0, "rows of 0 tokens");
  active_.resize(n);
  rank_docs_.resize(n);
  has_documents_.resize(n);
  walk_.least_epoch.resize(n);
  walk_.at_least_epoch.resize(n);
  walk_.visits.resize(n);
  for (uint32_t d = 0; d < n; ++d) {
    const std::string& name = config_.datasets[d].name;
    orders_.emplace_back(config_.seed, name, config_.datasets[d].docs, config_.logical_shards);
    interleave_keys_.push_back(DeriveKey(config_.seed, "interleave:" + name,
                                         (config_.world << 32) | config_.rank, s.generation));
    for (uint64_t j = s.shards.begin; j < s.shards.end; ++j) {
      const uint64_t size = orders_[d].Slice(j).size();
      if (size == 0) continue;
      active_[d].push_back(j);
      rank_docs_[d] += size;
    }
    has_documents_[d] = !active_[d].empty();
    FindLeastEpoch(walk_, d);
  }
  // A state saved at a jump's step started afresh then (EndBatch); a resume with other weights
  // starts afresh in the loader.
  mixer_ = Mixer(config_.schedule.WeightsAt(s.step), has_documents_);
}

void RowPlanner::EndBatch() {
  ++walk_.state.step;
  FollowSchedule();
}

void RowPlanner::FollowSchedule() {
  RankState& s = walk_.state;
  Mixer next(config_.schedule.WeightsAt(s.step), has_documents_);
  if (config_.schedule.JumpsAt(s.step) || !next.ReadsTheSame(mixer_)) {
    std::fill(s.deficit.begin(), s.deficit.end(), 0.0);
  }
  mixer_ = std::move(next);
}

void RowPlanner::NextRow(std::vector<Segment>* row) {
  row->clear();
  uint64_t remaining = config_.row_tokens;
  while (remaining > 0) {
    if (walk_.state.unfinished.empty()) StartNextDocument();
    const UnfinishedDoc doc = walk_.state.unfinished.front();
    ShardCursor& cursor = Touch(doc.shard, doc.dataset);
    const uint64_t number = DocumentAt(walk_, doc.shard, doc.dataset);
    const DocSpan span = locate_(doc.dataset, number);
    const uint64_t framed = framed_length(span.length);
    STOKER_ASSERT(cursor.offset < framed, "offset {} into a document of {} framed tokens",
                  cursor.offset, framed);
    const uint64_t take = std::min(framed - cursor.offset, remaining);
    row->push_back({doc.dataset, number, span, cursor.offset, take, doc.shard, cursor.epoch});
    cursor.offset += take;
    remaining -= take;
    if (cursor.offset == framed) {
      Advance(walk_, doc.shard, doc.dataset);
      walk_.state.unfinished.erase(walk_.state.unfinished.begin());
    }
  }
}

void RowPlanner::StartNextDocument() {
  const auto dataset = mixer_.Pick(walk_.state.deficit);
  STOKER_CHECK(dataset.has_value(), DataError,
               "rank {} of {} has no documents to read: every dataset of positive weight is "
               "empty on its {} logical shards",
               config_.rank, config_.world, walk_.state.shards.size());
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
    const uint64_t shard = NextShard(walk_, dataset);
    ++walk_.visits[dataset];
    const uint64_t framed =
        framed_length(locate_(dataset, DocumentAt(walk_, shard, dataset)).length);
    if (framed == 0) {
      Touch(shard, dataset);
      Advance(walk_, shard, dataset);
      continue;
    }
    walk_.state.delivered[dataset] += framed;
    mixer_.Count(dataset, framed, walk_.state.deficit);
    walk_.state.unfinished.push_back({dataset, shard});
    return;
  }
}

RowPlanner::Ahead RowPlanner::LookAhead(uint32_t dataset) {
  STOKER_ASSERT(has_documents_[dataset], "looking ahead in dataset {}, which has no documents here",
                dataset);
  if (!ahead_started_) {
    ahead_ = walk_;  // the unfinished documents' cursors still point at them: move them on
    for (const UnfinishedDoc& doc : walk_.state.unfinished) Advance(ahead_, doc.shard, doc.dataset);
    ahead_started_ = true;
  }
  while (true) {
    const uint64_t shard = NextShard(ahead_, dataset);
    const Ahead next{ahead_.visits[dataset]++, DocumentAt(ahead_, shard, dataset)};
    Advance(ahead_, shard, dataset);
    if (next.visit >= walk_.visits[dataset]) return next;
  }
}

void RowPlanner::FindLeastEpoch(Walk& walk, uint32_t dataset) const {
  walk.least_epoch[dataset] = UINT64_MAX;
  walk.at_least_epoch[dataset] = 0;
  for (uint64_t shard : active_[dataset]) {
    const uint64_t epoch = walk.state.cursor(shard, dataset).epoch;
    if (epoch < walk.least_epoch[dataset]) {
      walk.least_epoch[dataset] = epoch;
      walk.at_least_epoch[dataset] = 0;
    }
    if (epoch == walk.least_epoch[dataset]) ++walk.at_least_epoch[dataset];
  }
}

uint64_t RowPlanner::NextShard(Walk& walk, uint32_t dataset) const {
  const auto& active = active_[dataset];
  InterleaveCursor& at = walk.state.interleave[dataset];
  while (true) {
    const uint64_t key = DeriveKey(interleave_keys_[dataset], "cycle", at.cycle);
    const uint64_t shard = active[Permutation(active.size(), key).At(at.index)];
    if (++at.index == active.size()) {
      ++at.cycle;
      at.index = 0;
    }
    if (walk.state.cursor(shard, dataset).epoch == walk.least_epoch[dataset]) return shard;
  }
}

uint64_t RowPlanner::DocumentAt(const Walk& walk, uint64_t shard, uint32_t dataset) const {
  const ShardCursor& cursor = walk.state.cursor(shard, dataset);
  const uint64_t position = orders_[dataset].Slice(shard).begin + cursor.position;
  return orders_[dataset].Epoch(cursor.epoch).At(position);
}

ShardCursor& RowPlanner::Touch(uint64_t shard, uint32_t dataset) {
  touched_.push_back((shard - walk_.state.shards.begin) * walk_.state.datasets + dataset);
  return walk_.state.cursor(shard, dataset);
}

StateDelta RowPlanner::TakeDelta() {
  const RankState& s = walk_.state;
  StateDelta delta{.step = s.step,
                   .delivered = s.delivered,
                   .deficit = s.deficit,
                   .interleave = s.interleave,
                   .unfinished = s.unfinished};
  std::sort(touched_.begin(), touched_.end());
  touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  for (uint64_t index : touched_) delta.cursors.emplace_back(index, s.cursors[index]);
  touched_.clear();
  return delta;
}

void RowPlanner::Advance(Walk& walk, uint64_t shard, uint32_t dataset) const {
  ShardCursor& cursor = walk.state.cursor(shard, dataset);
  cursor.offset = 0;
  if (++cursor.position == orders_[dataset].Slice(shard).size()) {
    cursor.position = 0;
    if (cursor.epoch++ == walk.least_epoch[dataset] && --walk.at_least_epoch[dataset] == 0) {
      FindLeastEpoch(walk, dataset);
    }
  }
}

}  // namespace stoker

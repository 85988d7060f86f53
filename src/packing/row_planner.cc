#include "packing/row_planner.h"

#include <algorithm>

#include "base/check.h"
#include "order/random.h"

namespace stoker {

RowPlanner::RowPlanner(PlannerConfig config, RankState state, DocLocator locate)
    : config_(std::move(config)),
      shards_(config_, state),
      walk_{.state = std::move(state)},
      locate_(std::move(locate)),
      extra_(config_.bos ? 2 : 1) {
  const RankState& s = walk_.state;
  const auto n = static_cast<uint32_t>(config_.datasets.size());
  STOKER_ASSERT(s.datasets == n && s.delivered.size() == n && s.deficit.size() == n &&
                    s.interleave.size() == n && config_.schedule.datasets() == n,
                "state of {} datasets for {}", s.datasets, n);
  STOKER_ASSERT(config_.row_tokens > 0, "rows of 0 tokens");
  walk_.position = shards_.Start(s);
  // A state saved at a jump's step started afresh then (EndBatch); a resume with other weights
  // starts afresh in the loader.
  mixer_ = Mixer(config_.schedule.WeightsAt(s.step), shards_.has_documents());
}

void RowPlanner::EndBatch() {
  ++walk_.state.step;
  FollowSchedule();
}

void RowPlanner::FollowSchedule() {
  RankState& s = walk_.state;
  Mixer next(config_.schedule.WeightsAt(s.step), shards_.has_documents());
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
    const uint64_t number = shards_.DocumentAt(walk_.state, doc.shard, doc.dataset);
    const DocSpan span = locate_(doc.dataset, number);
    const uint64_t framed = framed_length(span.length);
    STOKER_ASSERT(cursor.offset < framed, "offset {} into a document of {} framed tokens",
                  cursor.offset, framed);
    const uint64_t take = std::min(framed - cursor.offset, remaining);
    row->push_back({doc.dataset, number, span, cursor.offset, take, doc.shard, cursor.epoch});
    cursor.offset += take;
    remaining -= take;
    if (cursor.offset == framed) {
      shards_.Advance(walk_.state, walk_.position, doc.shard, doc.dataset);
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
// the rank's next epochs of the dataset if need be (ShardWalk::CheckEmptyRun bounds how many).
// Nothing but the state decides, so a resumed run passes over the same documents.
void RowPlanner::StartDocumentOf(uint32_t dataset) {
  for (uint64_t skipped = 0;; ++skipped) {
    shards_.CheckEmptyRun(skipped, config_, dataset);
    const uint64_t shard = shards_.NextShard(walk_.state, walk_.position, dataset);
    const uint64_t framed =
        framed_length(locate_(dataset, shards_.DocumentAt(walk_.state, shard, dataset)).length);
    if (framed == 0) {
      Touch(shard, dataset);
      shards_.Advance(walk_.state, walk_.position, shard, dataset);
      continue;
    }
    walk_.state.delivered[dataset] += framed;
    mixer_.Count(dataset, framed, walk_.state.deficit);
    walk_.state.unfinished.push_back({dataset, shard});
    return;
  }
}

RowPlanner::Ahead RowPlanner::LookAhead(uint32_t dataset) {
  STOKER_ASSERT(shards_.has_documents(dataset),
                "looking ahead in dataset {}, which has no documents here", dataset);
  if (!ahead_started_) {
    ahead_ = walk_;  // the unfinished documents' cursors still point at them: move them on
    for (const UnfinishedDoc& doc : walk_.state.unfinished) {
      shards_.Advance(ahead_.state, ahead_.position, doc.shard, doc.dataset);
    }
    ahead_started_ = true;
  }
  while (true) {
    const uint64_t visit = ahead_.position.visits[dataset];
    const uint64_t shard = shards_.NextShard(ahead_.state, ahead_.position, dataset);
    const Ahead next{visit, shards_.DocumentAt(ahead_.state, shard, dataset)};
    shards_.Advance(ahead_.state, ahead_.position, shard, dataset);
    if (next.visit >= walk_.position.visits[dataset]) return next;
  }
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

}  // namespace stoker

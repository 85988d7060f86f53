#include "packing/row_planner.h"

#include <algorithm>

#include "base/check.h"
#include "order/random.h"

namespace stoker {

namespace {

// A state's clock, none taken as one from step 0 at `step_tokens`.
ClockBase BaseOf(const RankState& state, uint64_t step_tokens) {
  STOKER_ASSERT(state.step_tokens == 0 || state.step_tokens == step_tokens,
                "a state's clock of {} tokens a step for {} (RebaseClock)", state.step_tokens,
                step_tokens);
  return state.step_tokens == 0 ? ClockBase{} : state.clock;
}

}  // namespace

uint64_t RowPlanner::StepTokens(const PlannerConfig& config) {
  return config.world * config.rows * config.row_tokens;
}

MixClock RowPlanner::ClockOf(const PlannerConfig& config, const RankState& state) {
  return MixClock(config.schedule, StepTokens(config), BaseOf(state, StepTokens(config)));
}

RowPlanner::RowPlanner(PlannerConfig config, RankState state, DocLocator locate)
    : config_(std::move(config)),
      shards_(config_, state),
      walk_{.state = std::move(state)},
      locate_(std::move(locate)),
      extra_(config_.bos ? 2 : 1),
      clock_(ClockOf(config_, walk_.state)),
      units_(&config_, &shards_, &walk_.state, &walk_.position, &locate_, extra_, &touched_) {
  const RankState& s = walk_.state;
  const auto n = static_cast<uint32_t>(config_.datasets.size());
  STOKER_ASSERT(s.datasets == n && s.lane.started.size() == n && s.lane.dealers.size() == n &&
                    s.interleave.size() == n && config_.schedule.datasets() == n,
                "state of {} datasets for {}", s.datasets, n);
  STOKER_ASSERT(config_.row_tokens > 0 && config_.rows > 0, "rows of 0 tokens");
  walk_.position = shards_.Start(s);
  weights_ = config_.schedule.WeightsAt(s.step);
}

void RowPlanner::Begin() {
  if (lane_) return;
  OpenUnfinished();
  RankState& s = walk_.state;
  const auto n = static_cast<uint32_t>(config_.datasets.size());
  std::vector<LaneDataset> datasets;
  for (uint32_t d = 0; d < n; ++d) {
    const PlannerDataset& dataset = config_.datasets[d];
    LaneDataset& lane = datasets.emplace_back();
    lane.tie = DeriveKey(0, "tie:" + dataset.name);
    if (dataset.sizes) {
      lane.sizes = *dataset.sizes;
      lane.key = DeriveKey(config_.seed, "deal:" + dataset.name);
      const auto lanes = static_cast<uint32_t>(config_.world);
      if (d < s.redeal.size() && !s.redeal[d].empty()) {  // after a rescale
        s.lane.dealers[d] = Redeal(lane.sizes, lane.key, s.lane.dealers[d], s.redeal[d], lanes);
        s.lane.earlier[d].clear();
      } else if (s.lane.dealers[d].loads.empty()) {
        s.lane.dealers[d] = FirstDealerState(lanes);
      }
    } else {
      STOKER_CHECK(s.lane.dealers[d].loads.empty() && (d >= s.redeal.size() || s.redeal[d].empty()),
                   DataError,
                   "dataset {} was dealt to the ranks by the run that saved the state: "
                   "this run must deal it too",
                   dataset.name);
      lane.walked = shards_.has_documents(d);
      lane.tokens = dataset.tokens + dataset.docs * extra_;
    }
  }
  s.redeal.clear();
  lane_.emplace(static_cast<uint32_t>(config_.rank), static_cast<uint32_t>(config_.world),
                std::move(datasets), clock_, s.lane, &units_);
  s.lane = lane_->state();
}

void RowPlanner::OpenUnfinished() {
  RankState& s = walk_.state;
  std::vector<OpenUnit> opened;
  for (const UnfinishedDoc& u : s.unfinished) {
    const ShardCursor cursor = s.cursor(u.shard, u.dataset);
    const uint64_t doc = shards_.DocumentAt(s, u.shard, u.dataset);
    const uint64_t framed = framed_length(locate_(u.dataset, doc).length);
    STOKER_CHECK(cursor.offset < framed, DataError,
                 "document {} of dataset {} was left unfinished after {} framed tokens, but has "
                 "{}: the corpus changed under the checkpoint",
                 doc, config_.datasets[u.dataset].name, cursor.offset, framed);
    // Due (the lane computes when) as the rank's first document of the dataset would be.
    opened.push_back({.unit = {.dataset = u.dataset,
                               .dealt = {.position = u.shard,
                                         .epoch = cursor.epoch,
                                         .unit = doc,
                                         .lane = static_cast<uint32_t>(config_.rank),
                                         .size = framed}},
                      .done = cursor.offset});
    shards_.Advance(s, walk_.position, u.shard, u.dataset);
    touched_.push_back((u.shard - s.shards.begin) * s.datasets + u.dataset);
  }
  s.lane.open.insert(s.lane.open.end(), opened.begin(), opened.end());
  s.unfinished.clear();
}

void RowPlanner::EndBatch() {
  ++walk_.state.step;
  weights_ = config_.schedule.WeightsAt(walk_.state.step);
}

void RowPlanner::NextRow(std::vector<Segment>* row) {
  Begin();
  row->clear();
  uint64_t remaining = config_.row_tokens;
  const uint64_t step = walk_.state.step;
  while (remaining > 0) {
    const LanePiece piece = lane_->Take(step, remaining);
    const LaneUnit& unit = piece.unit;
    const DocSpan span = locate_(unit.dataset, unit.dealt.unit);
    STOKER_CHECK(framed_length(span.length) == unit.dealt.size, DataError,
                 "document {} of dataset {} has {} framed tokens, not the {} it had when it was "
                 "started: the corpus changed under the run",
                 unit.dealt.unit, config_.datasets[unit.dataset].name, framed_length(span.length),
                 unit.dealt.size);
    row->push_back({unit.dataset, unit.dealt.unit, span, piece.first, piece.count,
                    unit.dealt.position, unit.dealt.epoch});
    remaining -= piece.count;
  }
  walk_.state.lane = lane_->state();
}

RowPlanner::Ahead RowPlanner::LookAhead(uint32_t dataset) {
  STOKER_ASSERT(has_documents(dataset), "looking ahead in dataset {}, which has no documents here",
                dataset);
  Begin();
  if (config_.datasets[dataset].sizes) {  // dealt: the lane's own next units
    const Lane::Ahead next = lane_->LookAhead(dataset);
    return {next.visit, next.unit.unit};
  }
  if (!ahead_started_) {
    ahead_ = walk_;
    ahead_started_ = true;
  }
  while (true) {
    const uint64_t visit = ahead_.position.visits[dataset];
    const uint64_t shard = shards_.NextShard(ahead_.state, ahead_.position, dataset);
    const Ahead next{visit, shards_.DocumentAt(ahead_.state, shard, dataset)};
    shards_.Advance(ahead_.state, ahead_.position, shard, dataset);
    if (next.visit >= walk_.position.visits[dataset]) return next;  // the lane's visits too
  }
}

StateDelta RowPlanner::TakeDelta() {
  const RankState& s = walk_.state;
  StateDelta delta{.step = s.step, .interleave = s.interleave, .lane = s.lane, .redeal = s.redeal};
  std::sort(touched_.begin(), touched_.end());
  touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  for (uint64_t index : touched_) delta.cursors.emplace_back(index, s.cursors[index]);
  touched_.clear();
  return delta;
}

std::vector<bool> DealtIn(const RankState& state) {
  std::vector<bool> dealt;
  for (uint32_t d = 0; d < state.datasets; ++d) {
    dealt.push_back(!state.lane.dealers[d].loads.empty() ||
                    (d < state.redeal.size() && !state.redeal[d].empty()));
  }
  return dealt;
}

void StartDealing(const std::vector<bool>& dealt, uint64_t world, RankState* state) {
  for (uint32_t d = 0; d < state->datasets; ++d) {
    if (dealt[d]) state->lane.dealers[d] = FirstDealerState(static_cast<uint32_t>(world));
  }
}

void RebaseClock(const MixSchedule& saved, const MixSchedule& now, uint64_t step_tokens,
                 RankState* state) {
  if (state->step_tokens == 0) {
    state->clock = {};
    state->step_tokens = step_tokens;
  }
  if (saved == now && state->step_tokens == step_tokens) return;
  state->clock = MixClock(saved, state->step_tokens, state->clock).BaseAt(state->step);
  state->step_tokens = step_tokens;
}

}  // namespace stoker

// RowPlanner: which tokens go into each row a rank delivers. Pure: no I/O, no MPI, no clock.
//
// A rank's stream is its documents one after another, each framed as [BOS] tokens EOS (BOS only
// when the loader has one; empty documents are skipped, with no EOS), cut into consecutive,
// non-overlapping rows of `row_tokens` (= seq_len + 1) tokens. A document cut by a row's end goes
// on in a later row: no token is dropped and none is padded.
//
// The rank is a lane (mixing/lane.h): each piece of a row comes from the unit (document) its
// Lane gives, by the mixing clock (mixing/mix_clock.h) of the schedule (PlannerConfig::schedule)
// and the tokens of a global step: a document falls due when its dataset has earned the tokens
// the lanes started of it with it, due documents start first (least due time first, on a tie the
// larger weight, then a hash of the name), and documents started and not finished go on when
// nothing is due. Within a dataset, the documents come from the rank's walk through its logical
// shards (packing/shard_walk.h), which wraps each shard to its next epoch on its own: a small
// dataset with a large weight is upsampled. A document's shard cursor passes it when it starts.
// A dataset given its documents' sizes (PlannerDataset::sizes) is dealt instead: its stream of
// documents, epoch after epoch, is dealt to the ranks (order/dealer.h), so that its epochs are
// the dataset's over all ranks.
// Empty documents are passed over, into the next epochs if a rank's share of an epoch holds no
// other: a dataset of positive weight is never given up while it has a non-empty document.
//
// Document lengths come from a DocLocator the caller supplies (the loader reads document offsets;
// tests make them up). The state (RankState) is a value the planner advances; copy it between
// rows to checkpoint. Within a dataset, the order of documents depends on the state alone (only
// the choice of the next dataset needs lengths), so LookAhead tells which documents of a dataset
// come next before any of them is located: the loader reads their offsets ahead.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mixing/lane.h"
#include "mixing/mix_clock.h"
#include "packing/planner_config.h"
#include "packing/shard_walk.h"
#include "state/loader_state.h"

namespace stoker {

// A run of one document's framed tokens within a row: framed positions [first, first + count).
// With BOS, framed position 0 is BOS, 1..length the tokens, length + 1 the EOS; without,
// 0..length-1 are the tokens and `length` is the EOS.
struct Segment {
  uint32_t dataset = 0;
  uint64_t doc = 0;  // document number within the dataset
  DocSpan span;
  uint64_t first = 0;
  uint64_t count = 0;
  uint64_t shard = 0;  // logical shard and epoch it came from (for tests and diagnostics)
  uint64_t epoch = 0;
};

class RowPlanner {
 public:
  // `state`: its clock one of this config's step tokens (RebaseClock), or none (a fresh state);
  // documents it holds unfinished the format 1-4 way are opened as units when the planner first
  // plans or looks ahead (nothing is located before: the loader's reading thread does that).
  RowPlanner(PlannerConfig config, RankState state, DocLocator locate);
  RowPlanner(const RowPlanner&) = delete;
  RowPlanner& operator=(const RowPlanner&) = delete;

  // Replaces `row` with the segments of the next row; they add up to row_tokens. Throws
  // DataError when this rank has no document to deliver.
  void NextRow(std::vector<Segment>* row);

  // Counts a batch as delivered: the step goes up by one, and the weights are that step's.
  void EndBatch();
  // What changed since the last call (or since construction).
  StateDelta TakeDelta();

  // The documents of `dataset` in the order this planner will visit them (start them, or pass
  // over them when empty): each call returns the one after the document the previous call
  // returned, or after the last one the planner visited if that is further on. `visit` counts
  // the dataset's visits from construction on (as visits() does), so the document is needed once
  // visits(dataset) > visit. Documents open in the state are not among them. The first call
  // copies the state (one RankState more in memory). Only for a dataset with documents on this
  // rank (has_documents()).
  struct Ahead {
    uint64_t visit = 0;
    uint64_t doc = 0;
  };
  Ahead LookAhead(uint32_t dataset);
  // Documents of `dataset` the planner has visited since construction.
  uint64_t visits(uint32_t dataset) const { return lane_ ? lane_->visits(dataset) : 0; }
  // Whether the dataset has documents for this rank: dealt, or on its logical shards.
  bool has_documents(uint32_t dataset) const {
    return config_.datasets[dataset].sizes ? !config_.datasets[dataset].sizes->empty()
                                           : shards_.has_documents(dataset);
  }
  // Whether the dataset is read at the current step: documents and a positive weight.
  bool reads(uint32_t dataset) const { return weights_[dataset] > 0 && has_documents(dataset); }

  const RankState& state() const { return walk_.state; }
  const PlannerConfig& config() const { return config_; }
  uint64_t framed_length(uint64_t length) const { return length == 0 ? 0 : length + extra_; }
  // The tokens of a global step: world * rows * row_tokens.
  static uint64_t StepTokens(const PlannerConfig& config);
  // The mixing clock of `config` for `state`: its base (RebaseClock) at StepTokens(config), or
  // from step 0 for a fresh state.
  static MixClock ClockOf(const PlannerConfig& config, const RankState& state);

 private:
  // Where every dataset's sequence of documents stands: the state's cursors and the walk's
  // position in them.
  struct Walk {
    RankState state;
    ShardWalk::Position position;
  };
  // Opens the documents a state of format 1 to 4 left unfinished (as units open, their cursors
  // moved past them) and makes the lane, once.
  void Begin();
  void OpenUnfinished();

  PlannerConfig config_;
  ShardWalk shards_;
  Walk walk_;   // the rows'
  Walk ahead_;  // LookAhead's, once ahead_started_
  bool ahead_started_ = false;
  DocLocator locate_;
  uint64_t extra_;                 // 1 (EOS) or 2 (BOS and EOS)
  std::vector<uint64_t> touched_;  // cursor indices changed since TakeDelta
  MixClock clock_;
  WalkedUnits units_;            // the walk of walk_, as the lane's
  std::optional<Lane> lane_;     // once Begin()
  std::vector<double> weights_;  // at the current step
};

// The datasets `state` deals (PlannerDataset::sizes): those with a dealer's loads, or with old
// ranks' positions to deal again from (RankState::redeal, after a rescale). A fresh state deals
// none until StartDealing.
std::vector<bool> DealtIn(const RankState& state);
// Makes a fresh state of `world` lanes deal the datasets `dealt` marks from the stream's start,
// so that a save before the first batch says so too.
void StartDealing(const std::vector<bool>& dealt, uint64_t world, RankState* state);

// Makes `state`'s clock one of `step_tokens` tokens a step under `now` (the schedule a run goes
// on with): unchanged when `now` is `saved` (the schedule the state's clock ran under) and the
// step tokens are the same, so that the run goes on bit for bit; else from what that clock had
// earned at the state's step. A state of no clock (a fresh one, or one of format 1 to 4) is
// taken as one from step 0 at these step tokens under `saved`.
void RebaseClock(const MixSchedule& saved, const MixSchedule& now, uint64_t step_tokens,
                 RankState* state);

}  // namespace stoker

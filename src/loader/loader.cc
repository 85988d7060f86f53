// The Loader: SetUpLoader (collective), then a BatchStream from the starting state; Next() takes
// its batches in order on the trainer's thread and keeps the state after the last one.
#include "stoker/loader.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "base/check.h"
#include "checkpoint/checkpoint_store.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/corpus_record_file.h"
#include "checkpoint/restore.h"
#include "checkpoint/run_id.h"
#include "loader/batch_stream.h"
#include "loader/context_split.h"
#include "loader/loader_setup.h"
#include "loader/replica_broadcast.h"
#include "loader/replica_groups.h"
#include "loader/shared_settings.h"
#include "loader/unit_sizes.h"
#include "mixing/lane.h"
#include "mpi/agreement.h"
#include "packing/row_planner.h"
#include "state/loader_state.h"

namespace stoker {

namespace {

// "web=0.7, code=0.3": the datasets of positive weight.
std::string WeightsText(const CorpusTable& table, const std::vector<double>& weights) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < weights.size(); ++d) {
    if (weights[d] > 0)
      parts.push_back(fmt::format("{}={:.4g}", table.datasets[d].name, weights[d]));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// Collective: this run's identity, drawn by rank 0 and known to every rank, so that every rank
// file of a save carries the same one (docs/checkpoint.md).
std::string ShareRunId(const mpi::Comm& comm) {
  std::string run;
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) run = NewRunId();
  });
  comm.Broadcast(&run, 0);
  return run;
}

// What a pipeline stage takes of its replica's batches (LoaderConfig::fields_by_stage).
enum class Stage { kWhole, kFirst, kLast, kBetween };

Stage StageOf(const ReplicaGroups& groups, const LoaderConfig& config) {
  if (!config.fields_by_stage || groups.pipeline_size == 1) return Stage::kWhole;
  if (groups.pipeline_rank == 0) return Stage::kFirst;
  return groups.pipeline_rank == groups.pipeline_size - 1 ? Stage::kLast : Stage::kBetween;
}

// Collective over `replica`: the broadcast of its batches to the members that take them (the
// stages between the first and the last take none), or none when the replica's first rank is
// alone in taking them, or the replica's members read for themselves.
std::unique_ptr<ReplicaBroadcast> MakeBroadcast(const std::optional<mpi::Comm>& replica,
                                                const LoaderConfig& config, Stage stage) {
  if (!replica || config.replica_feed != ReplicaFeed::kBroadcast) return nullptr;
  const mpi::Comm takers = replica->Split(stage == Stage::kBetween ? 1 : 0);
  if (stage == Stage::kBetween || takers.size() == 1) return nullptr;
  return std::make_unique<ReplicaBroadcast>(takers.get());
}

// The fields a stage does not use, dropped: the first stage's loss mask, the last stage's
// fields of the inputs.
void KeepFieldsOfStage(Stage stage, Batch* batch) {
  Boundaries& b = batch->boundaries;
  if (stage == Stage::kFirst) b.loss_mask = {};
  if (stage == Stage::kLast) {
    b.position_ids = {};
    b.segment_ids = {};
    b.cu_seqlens = {};
    b.max_seqlen = 0;
  }
}

// While the other members of a replica set up, what they would log repeats what its first rank
// logs (a data-parallel group's rank 0 logs for its group): they log errors only.
class QuietMembers {
 public:
  explicit QuietMembers(const ReplicaGroups& groups) : before_(spdlog::get_level()) {
    if (groups.replica && groups.replica->rank() != 0) {
      spdlog::set_level(std::max(before_, spdlog::level::err));
    }
  }
  ~QuietMembers() { spdlog::set_level(before_); }
  QuietMembers(const QuietMembers&) = delete;
  QuietMembers& operator=(const QuietMembers&) = delete;

 private:
  const spdlog::level::level_enum before_;
};

}  // namespace

// The ranks of a replica group after its first (stoker/layout.h) read nothing in the broadcast
// feed: they set up as their data-parallel group's ranks do (the corpus table, the schedule, the
// resumed step), then hold no stream and take the first rank's batches from the broadcast.
class Loader::Impl {
 public:
  Impl(ReplicaGroups groups, const LoaderConfig& config);

  std::optional<Batch> Next();
  bool TryNext(std::chrono::milliseconds timeout, std::optional<Batch>* batch);
  // Throws ConfigError in a process forked from the one that made the Loader.
  void CheckProcess() const;
  bool InForkedChild() const { return getpid() != pid_; }
  void Save(const std::string& step_dir);
  void WaitForSave() { writer_.Wait(); }
  bool TryWaitForSave(std::chrono::milliseconds timeout) { return writer_.WaitFor(timeout); }
  std::string EncodedState() const { return EncodeCheckpoint(Snapshot()); }
  void SetWeights(const std::map<std::string, double>& weights);
  MixingShares Shares(bool since_step_zero) const;
  const LoaderSetup& setup() const { return setup_; }
  const RankState& delivered() const { return delivered_; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  bool saves() const { return replica_rank_ == 0; }
  MPI_Comm data_parallel_comm() const { return comm_.get(); }
  MPI_Comm replica_comm() const { return replica_ ? replica_->get() : MPI_COMM_SELF; }

 private:
  // Whether this rank reads its batches (every rank but a broadcast's receivers).
  bool reads() const { return stage_ != Stage::kBetween && (!broadcast_ || broadcast_->reader()); }
  std::optional<BatchStream::Ready> TakeReady(std::chrono::milliseconds timeout);
  std::unique_ptr<BatchStream> MakeStream() const;
  OrderIdentity Identity() const;
  // The reading pipeline; InternalError when a failed SetWeights left none.
  BatchStream& Stream() const;
  std::optional<Batch> Deliver(BatchStream::Ready ready);
  RankState StartingState();
  // Marks the batch's step when the weights change there (change_mark_), before its delta.
  void MarkWeightChange();
  // This replica's tokens per dataset since `step`, or since step 0 (on every member).
  std::vector<uint64_t> DeliveredSince(uint64_t step) const;
  RestoredState GivenState() const;
  // What a resume goes on from, as errors name it: the step folder, or the state given.
  std::string ResumeSource() const {
    return config_.resume_state.empty() ? config_.resume_from : "(resume_state)";
  }
  RankCheckpoint Snapshot() const;
  // The datasets the rank files of a resume deal (DealtIn), checked the same on every rank.
  std::vector<bool> AgreedDealt(const RankState& state) const;
  void FollowNewSchedule(const MixSchedule& saved, RankState* state) const;

  mpi::Comm comm_;                    // the data-parallel group
  std::optional<mpi::Comm> replica_;  // in a layout, this rank's replica group
  const int replica_rank_;
  const int context_size_, context_rank_;  // context parallelism (Batch::inputs)
  const Stage stage_;
  const std::string layout_;                     // what a save records
  std::unique_ptr<ReplicaBroadcast> broadcast_;  // ReplicaFeed::kBroadcast in a layout
  LoaderConfig config_;
  LoaderSetup setup_;      // its planner's schedule changes with SetWeights
  const std::string run_;  // this run's identity, in every rank file it saves (a resume draws anew)
  // Rank 0's encoded corpus record, written beside its rank file at every save (null on other
  // ranks): encoded once, since the table does not change during a run.
  std::shared_ptr<const std::string> corpus_record_;
  RankState delivered_;  // the state after the last batch Next() returned (trainer's thread)
  // The step the weights last changed at and this rank's delivered tokens then, per dataset
  // (DeliveredTokens), when this Loader delivered that step's batch (Shares).
  std::optional<std::pair<uint64_t, std::vector<uint64_t>>> change_mark_;
  CheckpointWriter writer_;
  std::unique_ptr<BatchStream> stream_;  // runs ahead of delivered_
  const pid_t pid_ = getpid();           // the process that made the Loader
};

Loader::Impl::Impl(ReplicaGroups groups, const LoaderConfig& config)
    : comm_(std::move(groups.data_parallel)),
      replica_(std::move(groups.replica)),
      replica_rank_(replica_ ? replica_->rank() : 0),
      context_size_(groups.context_size),
      context_rank_(groups.context_rank),
      stage_(StageOf(groups, config)),
      layout_(groups.layout),
      broadcast_(MakeBroadcast(replica_, config, stage_)),
      config_(config),
      setup_(SetUpLoader(comm_, &config_)),
      run_(ShareRunId(comm_)),
      corpus_record_(comm_.rank() == 0
                         ? std::make_shared<const std::string>(EncodedRecordOf(setup_.table))
                         : nullptr),
      delivered_(StartingState()),
      stream_(MakeStream()) {
  if (!stream_) return;
  const ReadQueue& queue = stream_->queue();
  if (!queue.fallback_reason().empty() && comm_.rank() == 0 && saves()) {
    spdlog::info("reading with {} threads at most: io_uring is not available ({})", queue.depth(),
                 queue.fallback_reason());
  }
}

OrderIdentity Loader::Impl::Identity() const {
  OrderIdentity id{.corpus_fingerprint = setup_.table.fingerprint,
                   .seed = config_.seed,
                   .logical_shards = config_.logical_shards,
                   .seq_len = config_.seq_len,
                   .eos_id = setup_.eos_id,
                   .bos_id = setup_.bos_id};
  for (const auto& d : setup_.table.datasets) id.datasets.push_back(d.name);
  return id;
}

// A run from step 0 deals the datasets DealtByRule names; a resume, those its state deals,
// whatever --deal-max-docs says now (its order goes on).
RankState Loader::Impl::StartingState() {
  if (config_.resume_from.empty() && config_.resume_state.empty()) {
    const std::vector<bool> dealt = DealtByRule(config_, setup_.table);
    DealDatasets(comm_, dealt, &setup_);
    RankState state = InitialRankState(setup_.table.datasets.size(), config_.logical_shards,
                                       comm_.size(), comm_.rank());
    StartDealing(dealt, setup_.planner.world, &state);
    RebaseClock(setup_.planner.schedule, setup_.planner.schedule,
                RowPlanner::StepTokens(setup_.planner), &state);
    return state;
  }
  RestoredState restored =
      config_.resume_state.empty()
          ? RestoreRankState(comm_, config_.resume_from, Identity(), setup_.table)
          : GivenState();
  DealDatasets(comm_, AgreedDealt(restored.state), &setup_);
  mpi::FailTogether(comm_, [&] { CheckStateFits(restored.state, setup_.planner, ResumeSource()); });
  FollowNewSchedule(restored.saved_schedule, &restored.state);
  return std::move(restored.state);
}

// LoaderConfig::resume_state: this rank's state of a run of as many ranks, every rank's of one
// step of one run, of this run's order.
RestoredState Loader::Impl::GivenState() const {
  RankCheckpoint given;
  mpi::FailTogether(comm_, [&] {
    given = DecodeCheckpoint(config_.resume_state, "the state given (resume_state)");
    const std::vector<std::string> differ = IdentityDifferences(given.identity, Identity());
    STOKER_CHECK(differ.empty(), ConfigError,
                 "the state given (resume_state) is of another order:\n  {}",
                 fmt::join(differ, "\n  "));
    STOKER_CHECK(given.world == static_cast<uint64_t>(comm_.size()), ConfigError,
                 "the state given (resume_state) is of a run of {} ranks, not {}: on another "
                 "number of ranks, resume from the step folder of a save (resume_from)",
                 given.world, comm_.size());
    STOKER_CHECK(given.rank == static_cast<uint64_t>(comm_.rank()), ConfigError,
                 "rank {} was given the state of rank {} (resume_state): every rank its own",
                 comm_.rank(), given.rank);
  });
  mpi::RequireAgreement(comm_,
                        {{"resume_state's step", std::to_string(given.state.step)},
                         {"resume_state's run", given.run}},
                        "the states given (resume_state) are not of one step of one run");
  spdlog::info("rank {}: resumed at step {} from the state given (resume_state)", comm_.rank(),
               given.state.step);
  return {std::move(given.state), std::move(given.schedule)};
}

std::vector<bool> Loader::Impl::AgreedDealt(const RankState& state) const {
  const std::vector<bool> dealt = DealtIn(state);
  std::vector<uint64_t> count(dealt.begin(), dealt.end());
  comm_.SumInPlace(count);
  mpi::FailTogether(comm_, [&] {
    for (size_t d = 0; d < dealt.size(); ++d) {
      STOKER_CHECK(count[d] == 0 || count[d] == static_cast<uint64_t>(comm_.size()), DataError,
                   "checkpoint {}: {} of {} ranks' states deal dataset {} to the ranks, the others "
                   "walk it: the rank files are not of one save",
                   ResumeSource(), count[d], comm_.size(), setup_.table.datasets[d].name);
    }
  });
  return dealt;
}

// The schedule of this run rules the steps not yet run, from what each dataset had earned at
// the resumed step by the saved run's clock (RebaseClock): with the same schedule and the same
// tokens a step, the run goes on bit for bit.
void Loader::Impl::FollowNewSchedule(const MixSchedule& saved, RankState* state) const {
  const MixSchedule& now = setup_.planner.schedule;
  const uint64_t step = state->step;
  RebaseClock(saved, now, RowPlanner::StepTokens(setup_.planner), state);
  if (now == saved) return;
  if (now.WeightsAt(step) != saved.WeightsAt(step)) {
    if (comm_.rank() == 0) {
      spdlog::info(
          "resume at step {}: mixing weights {} where the saved run had {}; they rule "
          "from here on",
          step, WeightsText(setup_.table, now.WeightsAt(step)),
          WeightsText(setup_.table, saved.WeightsAt(step)));
    }
  } else if (comm_.rank() == 0) {
    spdlog::info(
        "resume at step {}: the weight schedule differs from the saved run's; this "
        "one rules from here on",
        step);
  }
}

std::unique_ptr<BatchStream> Loader::Impl::MakeStream() const {
  if (!reads()) return nullptr;
  return std::make_unique<BatchStream>(setup_, config_, delivered_, comm_.rank());
}

RankCheckpoint Loader::Impl::Snapshot() const {
  return {.identity = Identity(),
          .weights = setup_.planner.schedule.WeightsAt(delivered_.step),
          .schedule = setup_.planner.schedule,
          .world = static_cast<uint64_t>(comm_.size()),
          .rank = static_cast<uint64_t>(comm_.rank()),
          .run = run_,
          .layout = layout_,
          .state = delivered_};
}

void Loader::Impl::Save(const std::string& step_dir) {
  if (!saves()) return;  // the replica's first rank writes the state they share
  RankCheckpoint snapshot = Snapshot();
  std::optional<CheckpointWriter::FirstFile> record;
  if (corpus_record_)
    record = CheckpointWriter::FirstFile{CorpusRecordPath(step_dir), corpus_record_};
  writer_.Submit(CheckpointPath(step_dir, snapshot.rank, snapshot.world), std::move(snapshot),
                 std::move(record));
}

BatchStream& Loader::Impl::Stream() const {
  if (!stream_) {
    throw InternalError(
        fmt::format("rank {}: no reading pipeline since a SetWeights failed to "
                    "start one",
                    comm_.rank()));
  }
  return *stream_;
}

// The batch handed to the trainer, and the state after it (a broadcast's receiver keeps only
// the step: it saves nothing).
std::optional<Batch> Loader::Impl::Deliver(BatchStream::Ready ready) {
  if (reads()) {
    MarkWeightChange();
    ApplyDelta(ready.delta, &delivered_);
  } else {
    delivered_.step = ready.batch.step;
  }
  SplitForContext(context_size_, context_rank_, &ready.batch);
  KeepFieldsOfStage(stage_, &ready.batch);
  return std::move(ready.batch);
}

void Loader::Impl::MarkWeightChange() {
  const MixSchedule& schedule = setup_.planner.schedule;
  const uint64_t step = delivered_.step;  // the batch's
  if (step == 0 || schedule.entries()[schedule.EntryAt(step)].step != step) return;
  change_mark_.emplace(step, DeliveredTokens(delivered_.lane, delivered_.datasets));
}

std::vector<uint64_t> Loader::Impl::DeliveredSince(uint64_t step) const {
  std::vector<uint64_t> tokens(setup_.table.datasets.size(), 0);
  if (replica_rank_ == 0) {  // a replica's other members follow its first one's lane
    tokens = DeliveredTokens(delivered_.lane, tokens.size());
    if (step > 0) {
      STOKER_ASSERT(change_mark_ && change_mark_->first == step, "no mark at step {}", step);
      for (size_t d = 0; d < tokens.size(); ++d) tokens[d] -= change_mark_->second[d];
    }
  }
  comm_.SumInPlace(std::span<uint64_t>(tokens));
  if (replica_) {
    MPI_Bcast(tokens.data(), static_cast<int>(tokens.size()), MPI_UINT64_T, 0, replica_->get());
  }
  return tokens;
}

// The clock is a function of the schedule and the state's base: the same on every rank.
MixingShares Loader::Impl::Shares(bool since_step_zero) const {
  const MixSchedule& schedule = setup_.planner.schedule;
  const uint64_t step = delivered_.step;
  const uint64_t last = step > 0 ? step - 1 : 0;
  uint64_t from = 0;
  if (!since_step_zero && step > 0) {
    const uint64_t changed = schedule.entries()[schedule.EntryAt(last)].step;
    const bool marked = change_mark_ && change_mark_->first == changed;
    // Marked on every rank that holds a lane, or on none (they delivered the same steps); a
    // replica's first member tells the others.
    uint64_t known = marked && replica_rank_ == 0 ? 1 : 0;
    if (replica_) MPI_Bcast(&known, 1, MPI_UINT64_T, 0, replica_->get());
    if (known == 1) from = changed;
  }
  MixingShares shares{.from_step = from,
                      .to_step = step,
                      .tokens = DeliveredSince(from),
                      .weights = schedule.WeightsAt(last)};
  const MixClock clock = RowPlanner::ClockOf(setup_.planner, delivered_);
  for (uint32_t d = 0; d < setup_.table.datasets.size(); ++d) {
    shares.datasets.push_back(setup_.table.datasets[d].name);
    // Before a rescale's base the clock earns at the new rate; `from` is 0 or past the base.
    shares.promised.push_back(clock.Earned(d, step) - (from == 0 ? 0.0 : clock.Earned(d, from)));
  }
  return shares;
}

// This rank's next batch: from its stream, or through the replica's broadcast.
std::optional<BatchStream::Ready> Loader::Impl::TakeReady(std::chrono::milliseconds timeout) {
  const auto take = [this](std::chrono::milliseconds t) -> std::optional<BatchStream::Ready> {
    if (t == std::chrono::milliseconds::max()) return Stream().Next();
    return Stream().TryNext(t);
  };
  if (stage_ == Stage::kBetween) {  // a step and nothing else
    return BatchStream::Ready{.batch = {.step = delivered_.step + 1,
                                        .rows = config_.batch_size,
                                        .row_tokens = config_.seq_len + 1},
                              .delta = {}};
  }
  return broadcast_ ? broadcast_->TryNext(timeout, take) : take(timeout);
}

std::optional<Batch> Loader::Impl::Next() {
  std::optional<BatchStream::Ready> ready = TakeReady(std::chrono::milliseconds::max());
  STOKER_ASSERT(ready, "rank {}: no batch where one was waited for", comm_.rank());
  return Deliver(std::move(*ready));
}

bool Loader::Impl::TryNext(std::chrono::milliseconds timeout, std::optional<Batch>* batch) {
  std::optional<BatchStream::Ready> ready = TakeReady(timeout);
  if (!ready) return false;
  *batch = Deliver(std::move(*ready));
  return true;
}

void Loader::Impl::CheckProcess() const {
  if (!InForkedChild()) return;
  throw ConfigError(fmt::format(
      "rank {}: this Loader was made in process {} and is used in process {}, a fork of it "
      "(a worker process): its reading thread, checkpoint writer and communicator exist only "
      "in process {}; take its batches there, or make a Loader in each process",
      comm_.rank(), pid_, getpid(), pid_));
}

// A new stream from the state after the last batch delivered: what the old one read ahead was
// planned with the old weights (an error it met there would meet the new one again). A stream
// that cannot start leaves the old schedule and state, and a stream of them if one starts.
void Loader::Impl::SetWeights(const std::map<std::string, double>& weights) {
  const uint64_t step = delivered_.step;
  RequireSameWeights(comm_, step, weights);
  if (replica_) RequireSameWeights(*replica_, step, weights);
  MixSchedule schedule = ScheduleSettingWeights(setup_.planner, setup_.table, step, weights);
  if (broadcast_) broadcast_->Drop();  // batches planned with the old weights
  stream_.reset();
  // The schedule keeps the steps before: the clock earned the same there, and goes on at the
  // new weights.
  const MixSchedule before = setup_.planner.schedule;
  setup_.planner.schedule = std::move(schedule);
  try {
    stream_ = MakeStream();
  } catch (...) {
    setup_.planner.schedule = before;
    try {
      stream_ = MakeStream();
    } catch (...) {  // Next() says so
    }
    throw;
  }
  if (!saves()) return;
  spdlog::info("rank {}: mixing weights {} from step {} on", comm_.rank(),
               WeightsText(setup_.table, setup_.planner.schedule.WeightsAt(step)), step);
}

// In a layout, the data-parallel groups set up each on their own: the job's ranks then agree on
// the outcome, so that no group goes on while another failed.
Loader::Loader(MPI_Comm comm, const LoaderConfig& config) {
  const mpi::Comm job(comm);
  ReplicaGroups groups = ResolveReplicaGroups(job, config);
  if (!groups.replica) {
    impl_ = std::make_unique<Impl>(std::move(groups), config);
    return;
  }
  const QuietMembers quiet(groups);
  mpi::FailTogether(job, [&] { impl_ = std::make_unique<Impl>(std::move(groups), config); });
}
// In a forked child the threads the destructor would join and the communicator it would free
// are the parent's: the memory is left as it is (the child's exit returns it).
Loader::~Loader() {
  if (impl_->InForkedChild()) static_cast<void>(impl_.release());
}
std::optional<Batch> Loader::Next() {
  impl_->CheckProcess();
  return impl_->Next();
}
bool Loader::TryNext(std::chrono::milliseconds timeout, std::optional<Batch>* batch) {
  impl_->CheckProcess();
  return impl_->TryNext(timeout, batch);
}
void Loader::Save(const std::string& step_dir) {
  impl_->CheckProcess();
  impl_->Save(step_dir);
}
std::string Loader::EncodedState() const {
  impl_->CheckProcess();
  return impl_->EncodedState();
}
void Loader::WaitForSave() {
  impl_->CheckProcess();
  impl_->WaitForSave();
}
bool Loader::TryWaitForSave(std::chrono::milliseconds timeout) {
  impl_->CheckProcess();
  return impl_->TryWaitForSave(timeout);
}
uint64_t Loader::step() const { return impl_->delivered().step; }

const CorpusTable& Loader::corpus() const { return impl_->setup().table; }
void Loader::SetWeights(const std::map<std::string, double>& weights) {
  impl_->CheckProcess();
  impl_->SetWeights(weights);
}
std::vector<double> Loader::weights() const {
  return impl_->setup().planner.schedule.WeightsAt(impl_->delivered().step);
}
MixingShares Loader::Shares(bool since_step_zero) const { return impl_->Shares(since_step_zero); }
WeightSchedule Loader::schedule() const {
  const LoaderSetup& setup = impl_->setup();
  WeightSchedule out;
  for (const MixEntry& e : setup.planner.schedule.entries()) {
    WeightScheduleEntry& entry =
        out.emplace_back(WeightScheduleEntry{.step = e.step, .ramp = e.ramp});
    for (size_t d = 0; d < e.weights.size(); ++d) {
      entry.weights[setup.table.datasets[d].name] = e.weights[d];
    }
  }
  return out;
}
int64_t Loader::eos_id() const { return impl_->setup().eos_id; }
std::optional<int64_t> Loader::bos_id() const { return impl_->setup().bos_id; }
int Loader::rank() const { return impl_->rank(); }
int Loader::world_size() const { return impl_->size(); }
bool Loader::replica_first() const { return impl_->saves(); }
MPI_Comm Loader::data_parallel_comm() const { return impl_->data_parallel_comm(); }
MPI_Comm Loader::replica_comm() const { return impl_->replica_comm(); }

}  // namespace stoker

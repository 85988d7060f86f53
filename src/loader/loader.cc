// The Loader: SetUpLoader (collective), then a reading thread that plans rows, keeps the reads of
// the batches ahead in flight (BatchReader) with those of the offsets of the documents after
// them (DocIndex), and queues finished batches; Next() takes them in order on the trainer's
// thread.
#include "stoker/loader.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "base/check.h"
#include "checkpoint/checkpoint_lock.h"
#include "checkpoint/checkpoint_store.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/corpus_record_file.h"
#include "checkpoint/restore.h"
#include "core/boundaries.h"
#include "core/loader_state.h"
#include "loader/batch_reader.h"
#include "loader/doc_index.h"
#include "loader/loader_setup.h"
#include "loader/read_router.h"

namespace stoker {

class Loader::Impl {
 public:
  Impl(MPI_Comm comm, const LoaderConfig& config);
  ~Impl();

  std::optional<Batch> Next();
  void Save(const std::string& step_dir);
  void WaitForSave() { writer_.Wait(); }
  const LoaderSetup& setup() const { return setup_; }
  const RankState& delivered() const { return delivered_; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }

 private:
  struct Ready {
    Batch batch;
    StateDelta delta;
  };
  enum class Step { kPlan, kRead, kStop };
  // A read of offsets waits behind the token reads in flight (about io_depth of them: 2 ms on a
  // local disk at 128, more on a parallel file system) while a batch is planned every half
  // millisecond or so: looking 2 batches ahead, a cold run's planner waited for ~130 blocks in
  // 1,200 batches; 8 ahead, for 3 to 7.
  static constexpr uint64_t kOffsetBatchesAhead = 8;
  void ReadAhead();
  Step NextStep(size_t being_read);
  void ReadOffsetsAhead();
  Ready PlanBatch();
  void Deliver(std::deque<Ready>* being_read, size_t complete);
  OrderIdentity Identity() const;
  RankState StartingState();

  mpi::Comm comm_;
  LoaderConfig config_;
  LoaderSetup setup_;
  // Rank 0's encoded corpus record, written beside its rank file at every save (null on other
  // ranks): encoded once, since the table does not change during a run.
  std::shared_ptr<const std::string> corpus_record_;
  RankState delivered_;  // the state after the last batch Next() returned (trainer's thread)
  CheckpointWriter writer_;

  // The reading thread's own: the planner runs ahead of delivered_.
  ShardPool pool_;
  ReadRouter router_;  // closed before the readers whose buffers its reads fill go
  DocIndex index_;     // added to the router first: offsets are read before tokens
  BatchReader reader_;
  RowPlanner planner_;
  std::vector<std::vector<Segment>> rows_;
  size_t window_;  // batches read at once (BatchesBeingRead)
  // Per dataset: documents ahead whose offsets the index holds (oldest first), and the planner's
  // visits when the last batch was planned.
  std::vector<std::deque<RowPlanner::Ahead>> held_;
  std::vector<uint64_t> visits_before_;
  bool looking_ahead_ = true;  // until the index holds every block for good

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Ready> queue_;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts when everything above exists
};

Loader::Impl::Impl(MPI_Comm comm, const LoaderConfig& config)
    : comm_(comm),
      config_(config),
      setup_(SetUpLoader(comm_, &config_)),
      corpus_record_(comm_.rank() == 0 ? std::make_shared<const std::string>(
                                             EncodeCorpusRecord(RecordOf(setup_.table)))
                                       : nullptr),
      delivered_(StartingState()),
      pool_(setup_.table, setup_.arrays, config_.max_open_files,
            ReadsDirect(config_, setup_.table)),
      router_(MakeReadQueue(config_.io_engine, config_.io_depth)),
      index_(setup_.table, &pool_, &router_, config_.offset_cache_bytes),
      reader_(&pool_, &router_, setup_.eos_id, setup_.bos_id),
      planner_(setup_.planner, delivered_,
               [this](uint32_t dataset, uint64_t doc) { return index_.Locate(dataset, doc); }),
      rows_(config_.batch_size),
      window_(BatchesBeingRead(config_)),
      held_(setup_.table.datasets.size()),
      visits_before_(setup_.table.datasets.size()),
      thread_([this] { ReadAhead(); }) {
  const ReadQueue& queue = router_.queue();
  if (!queue.fallback_reason().empty() && comm_.rank() == 0) {
    spdlog::info("reading with {} threads at most: io_uring is not available ({})", queue.depth(),
                 queue.fallback_reason());
  }
  spdlog::debug(
      "rank {}: reading with {}, {} reads in flight, {} batches at once, {}", comm_.rank(),
      IoEngineName(queue.engine()), queue.depth(), window_,
      pool_.direct_reads() ? "tokens read with O_DIRECT" : "every read through the page cache");
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

RankState Loader::Impl::StartingState() {
  if (config_.resume_from.empty()) {
    return InitialRankState(setup_.table.datasets.size(), config_.logical_shards, comm_.size(),
                            comm_.rank());
  }
  RestoredState restored = RestoreRankState(comm_, config_.resume_from, Identity(), setup_.table);
  mpi::FailTogether(comm_,
                    [&] { CheckStateFits(restored.state, setup_.planner, config_.resume_from); });
  if (restored.saved_weights != setup_.weights) {
    // Dynamic mixing: the new weights rule from this step on, so the counters start afresh
    // (kept, they would make the mixer first catch up with the new weights).
    spdlog::info("resume: mixing weights changed; they rule from step {} on", restored.state.step);
    std::fill(restored.state.delivered.begin(), restored.state.delivered.end(), 0);
  }
  return std::move(restored.state);
}

void Loader::Impl::Save(const std::string& step_dir) {
  RankCheckpoint snapshot{.identity = Identity(),
                          .weights = setup_.weights,
                          .world = static_cast<uint64_t>(comm_.size()),
                          .rank = static_cast<uint64_t>(comm_.rank()),
                          .state = delivered_};
  std::optional<CheckpointWriter::FirstFile> record;
  if (corpus_record_)
    record = CheckpointWriter::FirstFile{CorpusRecordPath(step_dir), corpus_record_};
  writer_.Submit(CheckpointPath(step_dir, snapshot.rank, snapshot.world), std::move(snapshot),
                 std::move(record));
}

Loader::Impl::~Impl() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
  router_.Close();
  spdlog::debug(
      "rank {}: {} document lookups, {} offset blocks read ({} on the spot, {} lookups "
      "waited for a block being read), {} token reads",
      comm_.rank(), index_.lookups(), index_.block_reads(), index_.misses(), index_.waits(),
      reader_.reads());
}

// Plans batches while the window has room, keeping their reads in flight; hands each batch to the
// queue as soon as it and every batch before it are read; waits for reads when it cannot plan,
// and for the trainer when nothing is being read and the queue is full.
void Loader::Impl::ReadAhead() {
  try {
    std::deque<Ready> being_read;  // oldest first
    while (true) {
      const Step step = NextStep(being_read.size());
      if (step == Step::kStop) return;
      if (step == Step::kPlan) {
        ReadOffsetsAhead();
        being_read.push_back(PlanBatch());
      }
      Deliver(&being_read, reader_.Take(/*wait=*/step == Step::kRead));
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    error_ = std::current_exception();
    changed_.notify_all();
  }
}

// Plan one more batch if the window and the queue have room, else wait for reads; with none being
// read, waits for room (or for the loader to stop).
Loader::Impl::Step Loader::Impl::NextStep(size_t being_read) {
  std::unique_lock lock(mutex_);
  const auto room = [&] {
    return being_read < window_ && queue_.size() + being_read < config_.prefetch + window_;
  };
  if (being_read == 0) changed_.wait(lock, [&] { return stopping_ || room(); });
  if (stopping_) return Step::kStop;
  return room() ? Step::kPlan : Step::kRead;
}

void Loader::Impl::Deliver(std::deque<Ready>* being_read, size_t complete) {
  if (complete == 0) return;
  {
    std::lock_guard lock(mutex_);
    for (; complete > 0; --complete) {
      queue_.push_back(std::move(being_read->front()));
      being_read->pop_front();
    }
  }
  changed_.notify_all();
}

// Keeps the offsets of each dataset's next documents held (RowPlanner::LookAhead): those of the
// next kOffsetBatchesAhead batches (as many documents as the last batch visited) and 8 more, so
// that a block of offsets is read while the tokens of the batches before it are; within the
// index's max_held(), shared evenly.
// Once the index holds every block for good (a corpus whose offsets fit the cache, all read),
// it lets go of what it holds and looks ahead no more: a second walk of the order per document
// costs a corpus in the page cache about a sixth of its rate.
void Loader::Impl::ReadOffsetsAhead() {
  const auto datasets = static_cast<uint32_t>(held_.size());
  if (looking_ahead_ && index_.HoldsEveryBlock()) {
    looking_ahead_ = false;
    for (uint32_t d = 0; d < datasets; ++d) {
      for (const RowPlanner::Ahead& ahead : held_[d]) index_.Release(d, ahead.doc);
      held_[d].clear();
    }
  }
  if (!looking_ahead_) return;
  uint64_t available = 0;
  for (uint32_t d = 0; d < datasets; ++d) available += planner_.available(d) ? 1 : 0;
  const uint64_t most = std::max<uint64_t>(1, index_.max_held() / std::max<uint64_t>(available, 1));
  for (uint32_t d = 0; d < datasets; ++d) {
    if (!planner_.available(d)) continue;
    auto& held = held_[d];
    const uint64_t visits = planner_.visits(d);
    while (!held.empty() && held.front().visit < visits) {
      index_.Release(d, held.front().doc);
      held.pop_front();
    }
    const uint64_t wanted = std::min(kOffsetBatchesAhead * (visits - visits_before_[d]) + 8, most);
    visits_before_[d] = visits;
    for (uint64_t looked = 0; held.size() < wanted && looked < wanted; ++looked) {
      const RowPlanner::Ahead next = planner_.LookAhead(d);
      if (index_.Hold(d, next.doc)) held.push_back(next);
    }
  }
}

Loader::Impl::Ready Loader::Impl::PlanBatch() {
  Ready ready;
  Batch& batch = ready.batch;
  batch.rows = config_.batch_size;
  batch.row_tokens = config_.seq_len + 1;
  batch.dataset_tokens.assign(setup_.table.datasets.size(), 0);
  for (uint32_t r = 0; r < rows_.size(); ++r) {
    planner_.NextRow(&rows_[r]);
    for (const Segment& s : rows_[r]) batch.dataset_tokens[s.dataset] += s.count;
    AppendPieces(rows_[r], r, &batch.pieces);
  }
  planner_.EndBatch();
  batch.step = planner_.state().step;
  ready.delta = planner_.TakeDelta();
  batch.tokens.resize(batch.rows * batch.row_tokens);
  reader_.Add(rows_, batch.row_tokens, batch.tokens.data());
  reader_.Start();
  if (config_.boundaries.Any()) {  // while the batch's reads are in flight
    batch.boundaries =
        ComputeBoundaries(batch.pieces, batch.rows, batch.row_tokens, config_.boundaries);
  }
  return ready;
}

std::optional<Batch> Loader::Impl::Next() {
  Ready ready;
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !queue_.empty() || error_; });
    if (queue_.empty()) std::rethrow_exception(error_);
    ready = std::move(queue_.front());
    queue_.pop_front();
  }
  changed_.notify_all();
  ApplyDelta(ready.delta, &delivered_);
  return std::move(ready.batch);
}

Loader::Loader(MPI_Comm comm, const LoaderConfig& config)
    : impl_(std::make_unique<Impl>(comm, config)) {}
Loader::~Loader() = default;
std::optional<Batch> Loader::Next() { return impl_->Next(); }
void Loader::Save(const std::string& step_dir) { impl_->Save(step_dir); }
void Loader::WaitForSave() { impl_->WaitForSave(); }
uint64_t Loader::step() const { return impl_->delivered().step; }

std::optional<std::string> Loader::FindResumeStep(MPI_Comm comm, const std::string& checkpoint_dir,
                                                  const std::vector<std::string>& required_files) {
  return FindNewestCompleteStep(mpi::Comm(comm), checkpoint_dir, required_files);
}
std::optional<std::string> Loader::PrepareResume(MPI_Comm comm, const std::string& checkpoint_dir,
                                                 const std::vector<std::string>& required_files) {
  const mpi::Comm world(comm);
  // Before the folder is even read: a run saving into it now is refused, not mistaken for an
  // interrupted one.
  LockCheckpointFolder(world, checkpoint_dir);
  const std::optional<std::string> step_dir =
      FindNewestCompleteStep(world, checkpoint_dir, required_files);
  SetAsideStepsAfter(world, checkpoint_dir, step_dir);
  return step_dir;
}
void Loader::PrepareFreshStart(MPI_Comm comm, const std::string& checkpoint_dir, bool start_over) {
  stoker::PrepareFreshStart(mpi::Comm(comm), checkpoint_dir, start_over);
}
const CorpusTable& Loader::corpus() const { return impl_->setup().table; }
const std::vector<double>& Loader::weights() const { return impl_->setup().weights; }
int64_t Loader::eos_id() const { return impl_->setup().eos_id; }
std::optional<int64_t> Loader::bos_id() const { return impl_->setup().bos_id; }
int Loader::rank() const { return impl_->rank(); }
int Loader::world_size() const { return impl_->size(); }

}  // namespace stoker

#include "loader/batch_stream.h"

#include <spdlog/spdlog.h>

#include "packing/boundaries.h"

namespace stoker {

BatchStream::BatchStream(const LoaderSetup& setup, const LoaderConfig& config,
                         const RankState& state, int rank)
    : config_(config),
      setup_(setup),
      rank_(rank),
      pool_(setup_.table, setup_.arrays, config_.max_open_files,
            ReadsDirect(config_, setup_.table)),
      router_(MakeReadQueue(config_.io_engine, config_.io_depth)),
      index_(setup_.table, &pool_, &router_, config_.offset_cache_bytes),
      reader_(&pool_, &router_, setup_.eos_id, setup_.bos_id),
      planner_(setup_.planner, state,
               [this](uint32_t dataset, uint64_t doc) { return index_.Locate(dataset, doc); }),
      rows_(config_.batch_size),
      window_(BatchesBeingRead(config_)),
      held_(setup_.table.datasets.size()),
      visits_before_(setup_.table.datasets.size()),
      thread_([this] { ReadAhead(); }) {
  const ReadQueue& queue = router_.queue();
  spdlog::debug(
      "rank {}: reading with {}, {} reads in flight, {} batches at once, {}", rank_,
      IoEngineName(queue.engine()), queue.depth(), window_,
      pool_.direct_reads() ? "tokens read with O_DIRECT" : "every read through the page cache");
}

BatchStream::~BatchStream() {
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
      rank_, index_.lookups(), index_.block_reads(), index_.misses(), index_.waits(),
      reader_.reads());
}

// Plans batches while the window has room, keeping their reads in flight; hands each batch to the
// queue as soon as it and every batch before it are read; waits for reads when it cannot plan,
// and for the trainer when nothing is being read and the queue is full.
void BatchStream::ReadAhead() {
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
BatchStream::Step BatchStream::NextStep(size_t being_read) {
  std::unique_lock lock(mutex_);
  const auto room = [&] {
    return being_read < window_ && queue_.size() + being_read < config_.prefetch + window_;
  };
  if (being_read == 0) changed_.wait(lock, [&] { return stopping_ || room(); });
  if (stopping_) return Step::kStop;
  return room() ? Step::kPlan : Step::kRead;
}

void BatchStream::Deliver(std::deque<Ready>* being_read, size_t complete) {
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
// index's max_held(), shared evenly among the datasets read at the planner's step (a dataset
// whose weight went to 0 lets go of what it held).
// Once the index holds every block for good (a corpus whose offsets fit the cache, all read),
// it lets go of what it holds and looks ahead no more: a second walk of the order per document
// costs a corpus in the page cache about a sixth of its rate.
void BatchStream::ReadOffsetsAhead() {
  const auto datasets = static_cast<uint32_t>(held_.size());
  if (looking_ahead_ && index_.HoldsEveryBlock()) {
    looking_ahead_ = false;
    for (uint32_t d = 0; d < datasets; ++d) {
      for (const RowPlanner::Ahead& ahead : held_[d]) index_.Release(d, ahead.doc);
      held_[d].clear();
    }
  }
  if (!looking_ahead_) return;
  uint64_t read = 0;
  for (uint32_t d = 0; d < datasets; ++d) read += planner_.reads(d) ? 1 : 0;
  const uint64_t most = std::max<uint64_t>(1, index_.max_held() / std::max<uint64_t>(read, 1));
  for (uint32_t d = 0; d < datasets; ++d) {
    auto& held = held_[d];
    const uint64_t visits = planner_.visits(d);
    while (!held.empty() && (held.front().visit < visits || !planner_.reads(d))) {
      index_.Release(d, held.front().doc);
      held.pop_front();
    }
    if (!planner_.reads(d)) continue;
    const uint64_t wanted = std::min(kOffsetBatchesAhead * (visits - visits_before_[d]) + 8, most);
    visits_before_[d] = visits;
    for (uint64_t looked = 0; held.size() < wanted && looked < wanted; ++looked) {
      const RowPlanner::Ahead next = planner_.LookAhead(d);
      if (index_.Hold(d, next.doc)) held.push_back(next);
    }
  }
}

BatchStream::Ready BatchStream::PlanBatch() {
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

BatchStream::Ready BatchStream::Next() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !queue_.empty() || error_; });
  return Take(&lock);
}

std::optional<BatchStream::Ready> BatchStream::TryNext(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [&] { return !queue_.empty() || error_; })) {
    return std::nullopt;
  }
  return Take(&lock);
}

// The batch at the head of the queue (or the reading thread's error), `lock` held.
BatchStream::Ready BatchStream::Take(std::unique_lock<std::mutex>* lock) {
  if (queue_.empty()) std::rethrow_exception(error_);
  Ready ready = std::move(queue_.front());
  queue_.pop_front();
  lock->unlock();
  changed_.notify_all();
  return ready;
}

}  // namespace stoker

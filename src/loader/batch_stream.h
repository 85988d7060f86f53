// BatchStream: a rank's batches from a given state on. A reading thread plans rows (RowPlanner),
// keeps the reads of the batches ahead in flight (BatchReader) with those of the offsets of the
// documents after them (DocIndex), and queues finished batches; Next() takes them in order on
// the trainer's thread, each with the change it makes to the state.
//
// The stream is a pure function of the state and the planner's configuration: a stream built
// from the state after step N gives what the stream that delivered step N gives next, bit for
// bit. The Loader builds one at its start and a new one when the weights change (SetWeights),
// dropping what the old one had read ahead.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "loader/batch_reader.h"
#include "loader/doc_index.h"
#include "loader/loader_setup.h"
#include "loader/read_router.h"
#include "loader/shard_pool.h"

namespace stoker {

class BatchStream {
 public:
  struct Ready {
    Batch batch;
    StateDelta delta;
  };

  // Starts the reading thread. `config`'s io_depth is settled (SetUpLoader); `rank` names this
  // rank in the debug log.
  BatchStream(const LoaderSetup& setup, const LoaderConfig& config, const RankState& state,
              int rank);
  // Stops the reading thread; reads in flight are waited for, their batches dropped.
  ~BatchStream();
  BatchStream(const BatchStream&) = delete;
  BatchStream& operator=(const BatchStream&) = delete;

  // The next batch; rethrows the reading thread's error.
  Ready Next();
  // The same, waiting at most `timeout`: none, and nothing taken, when no batch was ready by then.
  std::optional<Ready> TryNext(std::chrono::milliseconds timeout);
  const ReadQueue& queue() const { return router_.queue(); }

 private:
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
  Ready Take(std::unique_lock<std::mutex>* lock);

  const LoaderConfig& config_;
  const LoaderSetup& setup_;
  int rank_;
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

}  // namespace stoker

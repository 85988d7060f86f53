// BatchReader: turns planned rows (packing/row_planner.h) into tokens, with many reads in flight.
//
// Add() takes one batch's rows: it writes EOS and BOS in place, gathers every document piece the
// rows need, sorts them by file and position, merges pieces of one file that lie close together
// (neighbouring documents, or the two halves of a document cut by a row's end) into one read (a
// run) and queues the runs. Start() hands queued runs to the ReadRouter (loader/read_router.h)
// while it has room; Take() widens each finished run from the file's own type into its batch's
// rows and tells how many of the oldest batches are complete, waiting for reads if asked to.
// Batches complete in the order they were added, so a caller keeps several batches in flight and
// takes them in order. A failed or short read throws IoError naming the file, the array, the
// index and the byte offset (ShardReader::CheckTokenRead).
//
// A run holds its file's reader (ShardPool::Share) until it is read, so that the pool may close
// the file meanwhile. Arrays not stored directly are read through HDF5 at Start(), at once.
//
// Owned by one thread (the loader's reading thread); not thread safe. The rows' memory must stay
// put until their batch is complete, and the router must be closed before the reader goes while
// reads are in flight (they fill the reader's buffers).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "loader/read_router.h"
#include "loader/shard_pool.h"
#include "packing/row_planner.h"

namespace stoker {

class BatchReader : private ReadRouter::Client {
 public:
  // Pieces of one file at most this many tokens apart are read together.
  static constexpr uint64_t kMergeGap = 512;

  // Adds itself to `router` as a client.
  BatchReader(ShardPool* pool, ReadRouter* router, int64_t eos_id, std::optional<int64_t> bos_id);

  // Queues the reads of one batch: rows.size() rows of `row_tokens` tokens at `out`.
  void Add(const std::vector<std::vector<Segment>>& rows, uint64_t row_tokens, int64_t* out);
  // Starts queued reads while the router has room; never waits for storage.
  void Start() { router_->Start(); }
  // The number of the oldest batches complete now (they leave the reader), after starting what
  // it can. With `wait`, waits for reads until it is at least 1 (0 only when no batch is added).
  size_t Take(bool wait);

  size_t batches() const { return batches_.size(); }  // added, not yet complete
  uint64_t reads() const { return reads_; }

 private:
  struct Piece {
    uint32_t file;
    uint64_t begin;  // token index in the file
    uint64_t count;
    int64_t* dest;
  };
  struct Run {
    std::shared_ptr<ShardReader> reader;
    uint64_t begin = 0;  // tokens [begin, begin + count) of the file
    uint64_t count = 0;
    uint64_t batch = 0;         // sequence number of its batch
    std::vector<Piece> pieces;  // what lands where
    std::vector<char> bytes;    // the run in the file's type
  };
  void Plan(const Segment& segment, int64_t* row_at);
  void QueueRuns(uint64_t batch);
  void StartReads() override;
  void Finished(uint64_t slot, const ReadResult& read) override;  // widens the run
  size_t TakeComplete();

  ShardPool* pool_;
  ReadRouter* router_;
  uint32_t client_;
  int64_t eos_id_;
  std::optional<int64_t> bos_id_;
  std::vector<Piece> pieces_;  // of the batch being added
  std::vector<Run> runs_;      // slots, reused with their memory
  std::vector<size_t> free_;   // slots of runs_ not in use
  std::deque<size_t> queued_;  // slots not yet started, in order
  struct InFlight {
    uint64_t batch;
    size_t runs_left;
  };
  std::deque<InFlight> batches_;
  uint64_t next_batch_ = 0;
  uint64_t reads_ = 0;
};

}  // namespace stoker

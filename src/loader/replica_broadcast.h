// ReplicaBroadcast: the batches of a replica group (stoker/layout.h, ReplicaFeed::kBroadcast). Its
// first rank, the reader, takes them from its own BatchStream; the other members receive them by
// broadcast. The broadcast of batch j + 1 starts when the trainer takes batch j, so that it goes
// on during the trainer's step, as the reads do.
//
// Each batch is two nonblocking broadcasts, each on a communicator of its own: its size, then its
// bytes (loader/batch_bytes.h). A member starts the size's as soon as it takes the batch before,
// and the bytes' once the size is there; on each communicator every rank starts its broadcasts in
// the same order. An error of the reader's stream travels in place of the batch and is thrown
// on every member, as on the reader.
//
// Every member takes the same number of batches, as the ranks of a replica do in lock step: the
// last broadcast each started completes when the feed is destroyed, which waits for the others.
// Not thread safe: the trainer's thread.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "loader/batch_stream.h"
#include "mpi/comm.h"

namespace stoker {

class ReplicaBroadcast {
 public:
  // The reader's next batch from its stream, waiting at most the given time (none by then).
  using Take = std::function<std::optional<BatchStream::Ready>(std::chrono::milliseconds)>;

  // Collective over `replica` (duplicated twice).
  explicit ReplicaBroadcast(MPI_Comm replica);
  // Completes the broadcasts started (Drop).
  ~ReplicaBroadcast();
  ReplicaBroadcast(const ReplicaBroadcast&) = delete;
  ReplicaBroadcast& operator=(const ReplicaBroadcast&) = delete;

  bool reader() const { return sizes_.rank() == 0; }
  // Every member: the next batch, waiting at most `timeout` (none by then: the next call goes on
  // where this one stopped, nothing lost). The reader's comes with the change it makes to the
  // state; a member's with none. `take` is called on the reader only.
  std::optional<BatchStream::Ready> TryNext(std::chrono::milliseconds timeout, const Take& take);
  // Every member, together (SetWeights): completes the broadcasts started and forgets the batches
  // not yet taken; the next TryNext starts afresh from the reader's stream.
  void Drop();

 private:
  struct Message;
  using Clock = std::chrono::steady_clock;
  // Starts the broadcast of the next batch (the reader takes it first): false when the reader had
  // none by `deadline`.
  bool Start(Clock::time_point deadline, const Take& take);
  // Member: starts the bytes' broadcast of `m` once its size is there (waiting until `deadline`).
  bool StartBytes(Message* m, Clock::time_point deadline);
  // The batch of the oldest message started, once it is complete (false: not by `deadline`).
  bool Arrive(Clock::time_point deadline);

  mpi::Comm sizes_;
  mpi::Comm bytes_;
  std::deque<std::unique_ptr<Message>> started_;  // oldest first: batch j, then j + 1
  std::deque<std::unique_ptr<Message>> sending_;  // reader: taken, broadcasts not yet complete
  std::optional<BatchStream::Ready> held_;        // batch j, arrived, not yet taken
};

}  // namespace stoker

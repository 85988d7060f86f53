// ReadRouter: one ReadQueue (os/read_queue.h) shared by the loader's readers, so that the reads
// of document offsets (DocIndex) and of tokens (BatchReader) are in flight together and one
// depth bounds them all.
//
// Each reader is a client: it queues its own reads and submits them when StartReads() is called
// and the router has room; the router tags each read with its client and hands it back to that
// client once finished. Clients added first start first: the loader adds DocIndex before
// BatchReader, since a batch cannot even be planned before its documents' offsets are read.
//
// Owned by one thread (the loader's reading thread), as its queue is. Close() waits for the
// reads in flight: call it before the clients, whose buffers those reads fill, go.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "os/read_queue.h"

namespace stoker {

class ReadRouter {
 public:
  class Client {
   public:
    // Submits queued reads while the router has_room().
    virtual void StartReads() = 0;
    // A read this client submitted with `tag` has finished.
    virtual void Finished(uint64_t tag, const ReadResult& result) = 0;

   protected:
    ~Client() = default;
  };
  static constexpr int kClientBits = 4;
  static constexpr uint64_t kMaxTag = (uint64_t{1} << (64 - kClientBits)) - 1;

  explicit ReadRouter(std::unique_ptr<ReadQueue> queue) : queue_(std::move(queue)) {}
  ~ReadRouter() { Close(); }

  // Adds a client; returns its number, for Submit.
  uint32_t Add(Client* client);
  bool has_room() const { return queue_->in_flight() < queue_->depth(); }
  // Requires has_room() and request.tag <= kMaxTag.
  void Submit(uint32_t client, ReadRequest request);
  // Lets every client submit what it can, in the order they were added, and starts it all.
  void Start();
  // Start(), then hands every finished read to its client. With `wait`, first waits until one
  // has finished (returns at once when none is in flight).
  void Reap(bool wait);
  // Waits for the reads in flight; the router takes no more.
  void Close() { queue_.reset(); }

  const ReadQueue& queue() const { return *queue_; }

 private:
  std::unique_ptr<ReadQueue> queue_;
  std::vector<Client*> clients_;
  std::vector<ReadDone> done_;
};

}  // namespace stoker

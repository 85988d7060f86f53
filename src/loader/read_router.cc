#include "loader/read_router.h"

#include "base/check.h"

namespace stoker {

uint32_t ReadRouter::Add(Client* client) {
  STOKER_ASSERT(clients_.size() < (size_t{1} << kClientBits), "{} clients", clients_.size());
  clients_.push_back(client);
  return static_cast<uint32_t>(clients_.size() - 1);
}

void ReadRouter::Submit(uint32_t client, ReadRequest request) {
  STOKER_ASSERT(client < clients_.size() && request.tag <= kMaxTag && has_room(),
                "read of client {} with tag {} ({} in flight of {})", client, request.tag,
                queue_->in_flight(), queue_->depth());
  request.tag |= uint64_t{client} << (64 - kClientBits);
  queue_->Submit(request);
}

void ReadRouter::Start() {
  for (Client* client : clients_) {
    if (!has_room()) break;
    client->StartReads();
  }
  queue_->Flush();
}

void ReadRouter::Reap(bool wait) {
  Start();
  done_.clear();
  queue_->Reap(&done_, wait);
  for (const ReadDone& done : done_) {
    clients_[done.tag >> (64 - kClientBits)]->Finished(done.tag & kMaxTag, done.result);
  }
}

}  // namespace stoker

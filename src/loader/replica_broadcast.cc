#include "loader/replica_broadcast.h"

#include <thread>
#include <utility>

#include "loader/batch_bytes.h"

namespace stoker {

namespace {

using Clock = std::chrono::steady_clock;

// What a message's bytes hold after their first byte.
constexpr char kBatch = 'B';
constexpr char kError = 'E';

Clock::time_point DeadlineAfter(std::chrono::milliseconds timeout) {
  if (timeout >= std::chrono::hours(24 * 365)) return Clock::time_point::max();
  return Clock::now() + timeout;
}

// Until `deadline`: milliseconds::max() for none.
std::chrono::milliseconds TimeLeft(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return std::chrono::milliseconds::max();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(deadline - Clock::now(), Clock::duration::zero()));
}

// Whether `request` completed by `deadline` (polling it: each test lets MPI make progress).
bool Complete(mpi::Request* request, Clock::time_point deadline) {
  if (!request->active()) return true;
  if (deadline == Clock::time_point::max()) {
    request->Wait();
    return true;
  }
  while (!request->Test()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

}  // namespace

struct ReplicaBroadcast::Message {
  uint64_t size = 0;
  std::string bytes;
  mpi::Request size_request;
  mpi::Request bytes_request;
  bool bytes_started = false;
  std::optional<BatchStream::Ready> ready;  // the reader's batch
  std::exception_ptr error;                 // or the reader's error in its place
};

ReplicaBroadcast::ReplicaBroadcast(MPI_Comm replica) : sizes_(replica), bytes_(replica) {}

ReplicaBroadcast::~ReplicaBroadcast() {
  try {
    Drop();
  } catch (...) {  // an MPI failure at the end: nothing is left to hand the batches to
  }
}

bool ReplicaBroadcast::Start(Clock::time_point deadline, const Take& take) {
  auto m = std::make_unique<Message>();
  if (reader()) {
    try {
      m->ready = take(TimeLeft(deadline));
      if (!m->ready) return false;
      m->bytes = kBatch + EncodeBatch(m->ready->batch);
    } catch (...) {
      m->error = std::current_exception();
      m->bytes = kError + mpi::EncodeError(m->error);
    }
    m->size = m->bytes.size();
    m->size_request = sizes_.IBroadcast(&m->size, sizeof m->size, 0);
    m->bytes_request = bytes_.IBroadcast(m->bytes.data(), m->size, 0);
    m->bytes_started = true;
  } else {
    m->size_request = sizes_.IBroadcast(&m->size, sizeof m->size, 0);
  }
  started_.push_back(std::move(m));
  return true;
}

bool ReplicaBroadcast::StartBytes(Message* m, Clock::time_point deadline) {
  if (m->bytes_started) return true;
  if (!Complete(&m->size_request, deadline)) return false;
  m->bytes.resize(m->size);
  m->bytes_request = bytes_.IBroadcast(m->bytes.data(), m->size, 0);
  m->bytes_started = true;
  return true;
}

bool ReplicaBroadcast::Arrive(Clock::time_point deadline) {
  Message* m = started_.front().get();
  if (reader()) {
    if (m->error) std::rethrow_exception(m->error);  // as often as the trainer asks
    held_ = std::move(m->ready);
    sending_.push_back(std::move(started_.front()));
    started_.pop_front();
    return true;
  }
  if (!StartBytes(m, deadline) || !Complete(&m->bytes_request, deadline)) return false;
  const std::string_view bytes(m->bytes);
  if (bytes.empty() || bytes[0] != kBatch) {
    mpi::ThrowEncodedError(bytes.substr(1), /*collective=*/false);
  }
  held_ = BatchStream::Ready{.batch = DecodeBatch(bytes.substr(1)), .delta = {}};
  started_.pop_front();
  return true;
}

std::optional<BatchStream::Ready> ReplicaBroadcast::TryNext(std::chrono::milliseconds timeout,
                                                            const Take& take) {
  const Clock::time_point deadline = DeadlineAfter(timeout);
  while (!sending_.empty() && sending_.front()->size_request.Test() &&
         sending_.front()->bytes_request.Test()) {
    sending_.pop_front();
  }
  if (!held_) {
    if (started_.empty() && !Start(deadline, take)) return std::nullopt;
    if (!Arrive(deadline)) return std::nullopt;
  }
  // Batch j + 1 on its way during the trainer's step: a member starts its bytes' broadcast now
  // if the size is there already (else when it next asks).
  if (started_.empty() && !Start(deadline, take)) return std::nullopt;
  if (!reader()) StartBytes(started_.front().get(), Clock::time_point::min());
  return std::exchange(held_, std::nullopt);
}

void ReplicaBroadcast::Drop() {
  for (auto& m : started_) {
    StartBytes(m.get(), Clock::time_point::max());
    m->size_request.Wait();
    m->bytes_request.Wait();
  }
  started_.clear();
  sending_.clear();  // each waits for its broadcasts
  held_.reset();
}

}  // namespace stoker

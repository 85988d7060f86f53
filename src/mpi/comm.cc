#include "mpi/comm.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>

#include "base/bytes.h"
#include "base/check.h"
#include "stoker/collective.h"

namespace stoker::mpi {

void Check(int code, const char* what) {
  if (code == MPI_SUCCESS) [[likely]] {
    return;
  }
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw MpiError(fmt::format("{} failed: {} (MPI error {})", what,
                             length > 0 ? std::string(text, length) : "unknown", code));
}

void Abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; should it, the process must still end here
}

Session::Session(int* argc, char*** argv) {
  int initialized = 0;
  Check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (initialized) return;
  int provided = 0;
  Check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  owns_ = true;
}

Session::~Session() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && !finalized) MPI_Finalize();
}

bool CommTraits::Skip(MPI_Comm h) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized || h == MPI_COMM_WORLD || h == MPI_COMM_SELF;
}

void CommTraits::Close(MPI_Comm h) { MPI_Comm_free(&h); }

Comm::Comm(MPI_Comm comm) {
  MPI_Comm dup = MPI_COMM_NULL;
  Check(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup");
  handle_.Reset(dup);
  Check(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  Check(MPI_Comm_rank(dup, &rank_), "MPI_Comm_rank");
  Check(MPI_Comm_size(dup, &size_), "MPI_Comm_size");
}

void Comm::Barrier() const { Check(MPI_Barrier(get()), "MPI_Barrier"); }

void Comm::Broadcast(std::string* bytes, int root) const {
  uint64_t n = bytes->size();
  Check(MPI_Bcast(&n, 1, MPI_UINT64_T, root, get()), "MPI_Bcast");
  bytes->resize(n);
  // MPI counts are int: send large payloads in pieces.
  constexpr uint64_t kPiece = 1u << 30;
  for (uint64_t at = 0; at < n; at += kPiece) {
    const int count = static_cast<int>(std::min(kPiece, n - at));
    Check(MPI_Bcast(bytes->data() + at, count, MPI_BYTE, root, get()), "MPI_Bcast");
  }
}

Request Comm::IBroadcast(void* data, uint64_t bytes, int root) const {
  Request request;
  constexpr uint64_t kPiece = 1u << 30;
  for (uint64_t at = 0; at < bytes; at += kPiece) {
    MPI_Request& part = request.parts_.emplace_back(MPI_REQUEST_NULL);
    Check(MPI_Ibcast(static_cast<char*>(data) + at, static_cast<int>(std::min(kPiece, bytes - at)),
                     MPI_BYTE, root, get(), &part),
          "MPI_Ibcast");
  }
  if (request.parts_.empty()) request.parts_.push_back(MPI_REQUEST_NULL);  // nothing to send
  return request;
}

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    if (active()) Wait();
    parts_ = std::move(other.parts_);
    other.parts_.clear();
  }
  return *this;
}

Request::~Request() {
  if (!active()) return;
  try {
    Wait();
  } catch (...) {  // the error reached no one: there is no caller to take it
  }
}

bool Request::Test() {
  int done = 0;
  Check(MPI_Testall(static_cast<int>(parts_.size()), parts_.data(), &done, MPI_STATUSES_IGNORE),
        "MPI_Testall");
  if (done) parts_.clear();
  return done != 0;
}

void Request::Wait() {
  std::vector<MPI_Request> parts = std::move(parts_);
  parts_.clear();
  Check(MPI_Waitall(static_cast<int>(parts.size()), parts.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
}

std::vector<std::string> Comm::AllGather(const std::string& bytes) const {
  const uint64_t mine = bytes.size();
  std::vector<uint64_t> sizes(size_);
  Check(MPI_Allgather(&mine, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, get()),
        "MPI_Allgather");
  std::vector<int> counts(size_), displs(size_);
  uint64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    // Every rank holds the same sizes: every rank throws here, together.
    if (total + sizes[r] >= (uint64_t{1} << 31)) {
      throw MpiError(fmt::format("all-gather of {} bytes (up to rank {}) exceeds MPI's int counts",
                                 total + sizes[r], r),
                     /*collective=*/true);
    }
    counts[r] = static_cast<int>(sizes[r]);
    displs[r] = static_cast<int>(total);
    total += sizes[r];
  }
  std::string all(total, '\0');
  Check(MPI_Allgatherv(bytes.data(), counts[rank_], MPI_BYTE, all.data(), counts.data(),
                       displs.data(), MPI_BYTE, get()),
        "MPI_Allgatherv");
  std::vector<std::string> out(size_);
  for (int r = 0; r < size_; ++r) out[r] = all.substr(displs[r], counts[r]);
  return out;
}

std::vector<std::string> Comm::AllToAll(const std::vector<std::string>& to_each) const {
  STOKER_ASSERT(to_each.size() == static_cast<size_t>(size_), "{} messages for {} ranks",
                to_each.size(), size_);
  std::vector<uint64_t> send_sizes(size_), recv_sizes(size_);
  for (int r = 0; r < size_; ++r) send_sizes[r] = to_each[r].size();
  Check(MPI_Alltoall(send_sizes.data(), 1, MPI_UINT64_T, recv_sizes.data(), 1, MPI_UINT64_T, get()),
        "MPI_Alltoall");
  std::vector<int> send_counts(size_), send_displs(size_), recv_counts(size_), recv_displs(size_);
  std::string sent, received;
  for (int r = 0; r < size_; ++r) {
    STOKER_CHECK(sent.size() + send_sizes[r] < (uint64_t{1} << 31) &&
                     received.size() + recv_sizes[r] < (uint64_t{1} << 31),
                 MpiError, "all-to-all of more than 2 GiB per rank exceeds MPI's int counts");
    send_displs[r] = static_cast<int>(sent.size());
    send_counts[r] = static_cast<int>(send_sizes[r]);
    sent += to_each[r];
    recv_displs[r] = static_cast<int>(received.size());
    recv_counts[r] = static_cast<int>(recv_sizes[r]);
    received.resize(received.size() + recv_sizes[r]);
  }
  Check(MPI_Alltoallv(sent.data(), send_counts.data(), send_displs.data(), MPI_BYTE,
                      received.data(), recv_counts.data(), recv_displs.data(), MPI_BYTE, get()),
        "MPI_Alltoallv");
  std::vector<std::string> out(size_);
  for (int r = 0; r < size_; ++r) out[r] = received.substr(recv_displs[r], recv_counts[r]);
  return out;
}

void Comm::SumInPlace(std::span<uint64_t> values) const {
  Check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_UINT64_T,
                      MPI_SUM, get()),
        "MPI_Allreduce");
}

void Comm::SumInPlace(std::span<double> values) const {
  Check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE,
                      MPI_SUM, get()),
        "MPI_Allreduce");
}

void Comm::SumInPlace(std::span<float> values) const {
  Check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_FLOAT,
                      MPI_SUM, get()),
        "MPI_Allreduce");
}

uint64_t Comm::Sum(uint64_t value) const {
  SumInPlace(std::span<uint64_t>(&value, 1));
  return value;
}

uint64_t Comm::Max(uint64_t value) const {
  MaxInPlace(std::span<uint64_t>(&value, 1));
  return value;
}

void Comm::MaxInPlace(std::span<uint64_t> values) const {
  Check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_UINT64_T,
                      MPI_MAX, get()),
        "MPI_Allreduce");
}

int Comm::RanksOnThisNode() const { return NodeComm().size(); }

Comm Comm::NodeComm() const {
  MPI_Comm node = MPI_COMM_NULL;
  Check(MPI_Comm_split_type(get(), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
  const UniqueHandle<CommTraits> owned(node);
  return Comm(node);
}

Comm Comm::Split(int color) const {
  MPI_Comm part = MPI_COMM_NULL;
  Check(MPI_Comm_split(get(), color, rank_, &part), "MPI_Comm_split");
  const UniqueHandle<CommTraits> owned(part);
  return Comm(part);
}

namespace {

// Error kinds as they travel between ranks.
enum class Kind : uint8_t {
  kNone,
  kError,
  kConfig,
  kData,
  kIo,
  kMpi,
  kHdf5,
  kInternal,
  kOther,
  kBusy
};

Kind Classify(std::exception_ptr error, std::string* message) {
  if (!error) return Kind::kNone;
  try {
    std::rethrow_exception(error);
  } catch (const BusyError& e) {
    *message = e.what();
    return Kind::kBusy;
  } catch (const ConfigError& e) {
    *message = e.what();
    return Kind::kConfig;
  } catch (const DataError& e) {
    *message = e.what();
    return Kind::kData;
  } catch (const IoError& e) {
    *message = e.what();
    return Kind::kIo;
  } catch (const MpiError& e) {
    *message = e.what();
    return Kind::kMpi;
  } catch (const Hdf5Error& e) {
    *message = e.what();
    return Kind::kHdf5;
  } catch (const InternalError& e) {
    *message = e.what();
    return Kind::kInternal;
  } catch (const Error& e) {
    *message = e.what();
    return Kind::kError;
  } catch (const std::filesystem::filesystem_error& e) {  // e.g. a folder that cannot be listed
    *message = e.what();
    return Kind::kIo;
  } catch (const std::exception& e) {
    *message = e.what();
    return Kind::kOther;
  } catch (...) {
    *message = "unknown exception";
    return Kind::kOther;
  }
}

[[noreturn]] void Throw(Kind kind, const std::string& message, bool collective) {
  switch (kind) {
    case Kind::kBusy:
      throw BusyError(message, collective);
    case Kind::kConfig:
      throw ConfigError(message, collective);
    case Kind::kData:
      throw DataError(message, collective);
    case Kind::kIo:
      throw IoError(message, collective);
    case Kind::kMpi:
      throw MpiError(message, collective);
    case Kind::kHdf5:
      throw Hdf5Error(message, collective);
    case Kind::kInternal:
      throw InternalError(message, collective);
    default:
      throw Error(message, collective);
  }
}

}  // namespace

std::string EncodeError(std::exception_ptr error) {
  std::string message;
  const Kind kind = Classify(error, &message);
  if (kind == Kind::kNone) return std::string(1, '\0');
  ByteWriter out;
  out.Put(static_cast<uint8_t>(kind));
  out.PutString(message);
  return out.Take();
}

void ThrowEncodedError(std::string_view bytes, bool collective) {
  ByteReader in(bytes);
  const auto kind = static_cast<Kind>(in.Get<uint8_t>());
  if (kind != Kind::kNone) Throw(kind, in.GetString(), collective);
}

void RaiseTogether(const Comm& comm, std::exception_ptr error) {
  const auto all = comm.AllGather(EncodeError(error));
  for (const std::string& theirs : all) ThrowEncodedError(theirs, /*collective=*/true);
}

void FailTogether(const Comm& comm, const std::function<void()>& local) {
  std::exception_ptr error;
  try {
    local();
  } catch (...) {
    error = std::current_exception();
  }
  RaiseTogether(comm, error);
}

int RunProgram(const Comm& world, const std::function<int()>& body) {
  // Alone, no rank waits for this one: a plain exit code, without MPI_Abort's banner.
  const auto end_alone = [&](const char* what, int code) {
    spdlog::error("{}", what);
    spdlog::default_logger()->flush();
    if (world.size() > 1) Abort(code);
    return code;
  };
  try {
    return body();
  } catch (const Error& e) {
    const int code = dynamic_cast<const BusyError*>(&e) != nullptr ? 3 : 1;
    if (!e.collective()) return end_alone(e.what(), code);
    if (world.rank() == 0) spdlog::error("{}", e.what());
    return code;
  } catch (const std::exception& e) {
    return end_alone(e.what(), 1);
  }
}

}  // namespace stoker::mpi

namespace stoker {

// The public calls of stoker/collective.h, on a duplicate of the caller's communicator.

void FailTogether(MPI_Comm comm, const std::function<void()>& local) {
  mpi::FailTogether(mpi::Comm(comm), local);
}

void BroadcastBytes(MPI_Comm comm, std::string* bytes, int root) {
  mpi::Comm(comm).Broadcast(bytes, root);
}

}  // namespace stoker

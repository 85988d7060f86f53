// The MPI layer: the only code that calls MPI. Every failing MPI call becomes stoker::MpiError
// with MPI_Error_string's text; nothing above this layer sees an MPI error code.
//
// Comm owns a duplicate of a communicator (errors returned, not fatal). Its collective members
// must be called by all ranks of the communicator in the same order. Not thread safe: one thread
// per Comm.
//
// FailTogether is how stoker keeps one rank from throwing out of a collective alone: each rank
// does its local part, then all ranks exchange their outcome and, if any rank failed, every rank
// throws the error of the lowest failing rank, marked collective.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_handle.h"

namespace stoker::mpi {

// Throws MpiError naming `what` when `code` is not MPI_SUCCESS.
void Check(int code, const char* what);

// Ends every process of the job with exit code `code` (MPI_Abort on MPI_COMM_WORLD): for a rank
// that cannot fail together with the others. Never returns.
[[noreturn]] void Abort(int code);

// Process-wide MPI for programs (not for the library, which never calls MPI_Init): initializes
// MPI unless it already is, and finalizes it on destruction if it initialized it.
class Session {
 public:
  Session(int* argc, char*** argv);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

 private:
  bool owns_ = false;
};

struct CommTraits {
  using Handle = MPI_Comm;
  static Handle Null() { return MPI_COMM_NULL; }
  static bool Skip(Handle h);
  static void Close(Handle h);
};

// Nonblocking collectives in flight (Comm::IBroadcast): each part an MPI request. A request that
// is not complete when it is destroyed is waited for (MPI cannot drop a collective once started).
class Request {
 public:
  Request() = default;
  Request(Request&& other) noexcept : parts_(std::move(other.parts_)) { other.parts_.clear(); }
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request();

  bool active() const { return !parts_.empty(); }
  // Whether it is complete (then no longer active); never blocks.
  bool Test();
  void Wait();

 private:
  friend class Comm;
  std::vector<MPI_Request> parts_;
};

class Comm {
 public:
  // Collective over `comm`: duplicates it so that stoker's messages never mix with the caller's.
  explicit Comm(MPI_Comm comm);
  Comm(Comm&&) = default;
  Comm& operator=(Comm&&) = default;

  MPI_Comm get() const { return handle_.get(); }
  int rank() const { return rank_; }
  int size() const { return size_; }

  void Barrier() const;
  // Root's `bytes` reach every rank.
  void Broadcast(std::string* bytes, int root) const;
  // Starts the broadcast of root's `bytes` bytes at `data` to the same place on every rank (any
  // size: large ones go in pieces); the buffer stays untouched until the request completes.
  // Collective: every rank starts its broadcasts in the same order.
  Request IBroadcast(void* data, uint64_t bytes, int root) const;
  // Every rank's `bytes`, indexed by rank, on every rank. More than 2 GiB in all is an MpiError
  // that every rank throws together (collective).
  std::vector<std::string> AllGather(const std::string& bytes) const;
  // Personalized all-to-all: to_each[r] goes to rank r; returns what each rank sent to this one.
  // One exchange of sizes (MPI_Alltoall), then one of the bytes (MPI_Alltoallv).
  std::vector<std::string> AllToAll(const std::vector<std::string>& to_each) const;
  void SumInPlace(std::span<uint64_t> values) const;
  void SumInPlace(std::span<double> values) const;
  void SumInPlace(std::span<float> values) const;
  uint64_t Sum(uint64_t value) const;
  uint64_t Max(uint64_t value) const;
  void MaxInPlace(std::span<uint64_t> values) const;
  // Collective: the ranks of this communicator that share this rank's node (its memory), this one
  // included.
  int RanksOnThisNode() const;
  // Collective: those ranks as a communicator, in this one's order.
  Comm NodeComm() const;
  // Collective: the ranks that give the same `color` (>= 0), in this communicator's order.
  Comm Split(int color) const;

 private:
  UniqueHandle<CommTraits> handle_;
  int rank_ = 0;
  int size_ = 1;
};

// Collective. Runs `local` on this rank, then agrees with the other ranks on the outcome: returns
// normally when every rank succeeded, otherwise throws on every rank the error of the lowest
// failing rank (same kind, same message, collective() true). stoker's error kinds keep their
// kind; std::filesystem::filesystem_error becomes IoError; anything else becomes Error.
void FailTogether(const Comm& comm, const std::function<void()>& local);

// An error as bytes that another rank turns back into it (ThrowEncodedError): its kind and its
// message; no error (null) is a byte of its own.
std::string EncodeError(std::exception_ptr error);
// Throws the error `bytes` hold, of its kind, marked `collective` or not; nothing for no error.
void ThrowEncodedError(std::string_view bytes, bool collective);

// Collective. Rethrows `error` (if any) on every rank as described for FailTogether.
void RaiseTogether(const Comm& comm, std::exception_ptr error);

// For a program's main(): runs `body` and returns its exit code. An error that every rank raised
// together (collective) is logged once, by rank 0, and every rank returns 1 (3 for a BusyError: a
// folder another run holds); any other error is logged by the rank that saw it, which then ends
// the job with MPI_Abort so that no other rank waits for it for ever (alone, on one rank, it
// returns the code: one line, no MPI_Abort banner).
int RunProgram(const Comm& world, const std::function<int()>& body);

}  // namespace stoker::mpi

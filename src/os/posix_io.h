// The I/O seam: the system calls stoker makes on its own files -- the checkpoint writes
// (os/files.cc: open, write, fsync, rename, link) and the shard reads (shard/shard_reader.cc: open,
// pread, fstat) -- go through the functions of stoker::posix, so that tests can make them fail.
//
// By default each is the POSIX call itself behind one relaxed atomic load of a flag that is false
// (no measurable cost on the read path: docs/reliability.md). A test, or the `stoker` program
// from the environment variable STOKER_FAULTS (testing only, never read by the library itself),
// installs a FaultPlan: rules that fail the Nth write/fsync/rename/... on paths containing a
// substring, or every pread covering a byte offset of a file, with an errno (EIO by default), or
// only delay a call. The failing call returns -1 with errno set, as the real one would, so the
// callers' own error paths run.
//
// Thread safe: the plan is replaced under a mutex and consulted under it (only while armed).
// Counters of a rule count the calls of all threads of the process.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

enum class IoCall { kOpen, kPread, kWrite, kFsync, kRename, kFstat, kLink };
std::string_view IoCallName(IoCall call);  // "open", "pread", ...

// One rule of a fault plan. A call matches when it is of kind `call`, its path contains
// `path_contains` and, for a pread with `at_byte`, its byte range covers that offset.
struct FaultRule {
  IoCall call = IoCall::kWrite;
  std::string path_contains;        // empty: any path
  uint64_t nth = 1;                 // act on the nth matching call (from 1); 0: on every one
  std::optional<uint64_t> at_byte;  // pread only: calls reading this byte offset of the file
  int error = EIO;                  // errno of the failing call
  uint32_t delay_ms = 0;            // > 0: sleep this long, then make the call (no failure)
  std::optional<int> rank;          // only in the process of this MPI rank (STOKER_FAULTS)
  bool operator==(const FaultRule&) const = default;
};

// Parses a plan: rules separated by ',', each CALL:PATH_SUBSTRING:WHEN[:OPTION...] where CALL is
// open|pread|write|fsync|rename|fstat, WHEN is N (the Nth matching call), '*' (every one) or
// @BYTE (pread: every read covering byte BYTE of the file), and OPTION is eio|enospc|edquot|erofs
// (the errno; eio by default), delay=MS (slow the call down instead of failing it) or rank=R.
// Example: "fsync:ckpt:1,pread:part-00001.h5:@4096". Throws ConfigError naming the bad rule.
std::vector<FaultRule> ParseFaultPlan(std::string_view text);

// Replaces the process's plan (an empty plan disarms the seam) and resets its counters.
void InstallFaultPlan(std::vector<FaultRule> rules);
// How many calls the plan failed or delayed since it was installed.
uint64_t FaultsInjected();

// Installs the plan of STOKER_FAULTS, keeping the rules without a rank or with this process's
// rank (from OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK; 0 when none is set). For the `stoker`
// program only, at start-up. Throws ConfigError for a bad plan; does nothing when unset.
void InstallFaultPlanFromEnvironment();

// Installs a plan for a scope (tests); the destructor disarms the seam.
class ScopedFaultPlan {
 public:
  explicit ScopedFaultPlan(std::string_view plan) { InstallFaultPlan(ParseFaultPlan(plan)); }
  ~ScopedFaultPlan() { InstallFaultPlan({}); }
  ScopedFaultPlan(const ScopedFaultPlan&) = delete;
  ScopedFaultPlan& operator=(const ScopedFaultPlan&) = delete;
};

namespace internal {
extern std::atomic<bool> faults_armed;
// Applies the plan to one call: true when it must fail (errno is then set); sleeps for a delay.
bool InjectFault(IoCall call, std::string_view path, uint64_t offset, uint64_t bytes);
inline bool Faulted(IoCall call, std::string_view path, uint64_t offset = 0, uint64_t bytes = 0) {
  return faults_armed.load(std::memory_order_relaxed) && InjectFault(call, path, offset, bytes);
}
}  // namespace internal

// The seam. Each takes the path of the file (for the plan's matching only) and behaves as the
// POSIX call of the same name.
namespace posix {

inline int Open(const std::string& path, int flags, mode_t mode = 0) {
  if (internal::Faulted(IoCall::kOpen, path)) [[unlikely]]
    return -1;
  return ::open(path.c_str(), flags, mode);
}
inline ssize_t Pread(int fd, void* out, size_t bytes, off_t offset, const std::string& path) {
  if (internal::Faulted(IoCall::kPread, path, static_cast<uint64_t>(offset), bytes)) [[unlikely]]
    return -1;
  return ::pread(fd, out, bytes, offset);
}
inline ssize_t Write(int fd, const void* data, size_t bytes, const std::string& path) {
  if (internal::Faulted(IoCall::kWrite, path, 0, bytes)) [[unlikely]]
    return -1;
  return ::write(fd, data, bytes);
}
// Matches the rules of `write`.
inline ssize_t Pwrite(int fd, const void* data, size_t bytes, off_t offset,
                      const std::string& path) {
  if (internal::Faulted(IoCall::kWrite, path, static_cast<uint64_t>(offset), bytes)) [[unlikely]]
    return -1;
  return ::pwrite(fd, data, bytes, offset);
}
inline int Fsync(int fd, const std::string& path) {
  if (internal::Faulted(IoCall::kFsync, path)) [[unlikely]]
    return -1;
  return ::fsync(fd);
}
inline int Fstat(int fd, struct stat* out, const std::string& path) {
  if (internal::Faulted(IoCall::kFstat, path)) [[unlikely]]
    return -1;
  return ::fstat(fd, out);
}
// Matches rules against `from` (the file being renamed).
int Rename(const std::string& from, const std::string& to);
// A hard link `to` of `from`; matches rules against `to` (the name being made).
int Link(const std::string& from, const std::string& to);

}  // namespace posix
}  // namespace stoker

// How the package waits. Every wait releases the GIL and lasts slices of kSlice, between which the
// signal handlers run: Ctrl-C (a KeyboardInterrupt) reaches the caller within a slice, whatever
// storage or the other ranks are doing.
//
// Work the caller may leave (Leavable): a collective call that reads storage (a loader's
// construction, a resume, the resume helpers, set_weights) runs on the package's worker thread
// while the caller waits for it so. A caller that leaves (Ctrl-C) leaves the work to go on to its
// end there, as the other ranks expect of this one in its collectives; its result is dropped on
// that thread (a loader made is ended). The worker runs one piece of work at a time, in the order
// the calls started them, so collectives keep the order of the calls. Loaders ended by close() end
// on threads of their own (EndOnItsOwnThread). At exit the process waits for both
// (WaitForBackgroundWork) before MPI ends.
#pragma once

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "stoker/loader.h"

namespace stoker::python {

namespace py = pybind11;

// At the module's import: the process whose worker runs the work (WorkerMayRun).
void StartWaiting();

// How long a call waits before it lets the signal handlers run: well within a second.
constexpr std::chrono::milliseconds kSlice{50};

// Runs the signal handlers (main thread only; elsewhere nothing to do); a handler's exception,
// KeyboardInterrupt above all, propagates. Called with the GIL released.
void RunSignalHandlers();

// Waits until `try_wait(kSlice)` says done, running the signal handlers between slices. With the
// GIL released.
template <typename TryWait>
void WaitReleased(TryWait&& try_wait) {
  while (!try_wait(kSlice)) RunSignalHandlers();
}

// WaitReleased, called with the GIL held.
template <typename TryWait>
void WaitInSlices(TryWait&& try_wait) {
  py::gil_scoped_release release;
  WaitReleased(try_wait);
}

// Ends `loader` (its reading thread, its checkpoint writer, its communicator) on a thread of its
// own, so that a read that storage holds up does not hold up the caller.
void EndOnItsOwnThread(std::unique_ptr<Loader> loader);

// Waits until the work started on the worker and the loaders ending on threads of their own are
// done: at exit, before MPI is finalized. With the GIL held; a KeyboardInterrupt leaves the wait.
void WaitForBackgroundWork();

// Whether one piece of work started on the worker is done.
class WorkDone {
 public:
  // True once done; false when `timeout` passed first.
  bool WaitFor(std::chrono::milliseconds timeout);
  void Set();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
};

// Runs `work` on the worker thread after the work started before it.
std::shared_ptr<WorkDone> StartOnWorker(std::function<void()> work);
// Whether work may move to the worker: this is the process that imported the module (in a
// forked child the loader's calls refuse at once, on the caller's thread) and MPI lets any
// thread call it at any time (MPI_THREAD_MULTIPLE, as mpi4py asks by default: work left on the
// worker may call MPI while the caller does). Otherwise Leavable runs work on the caller's
// thread.
bool WorkerMayRun();
// Logs the error of work a caller left (nobody else will see it).
void LogLeftError(const std::exception_ptr& error);

// `work()` (no Python objects in it: it runs without the GIL), on the worker while the caller
// waits in slices; its result, or its exception. A KeyboardInterrupt during the wait leaves the
// work to its end on the worker, its result dropped there and its error logged. `busy`, when
// given, holds the work's WorkDone while it runs and after the caller left it, so that what the
// work uses waits for it (PyLoader::Locked, a signal handler's call included); it is cleared
// when the caller saw the work end. Called with the GIL released.
template <typename Work>
auto LeavableReleased(Work work, std::shared_ptr<WorkDone>* busy = nullptr)
    -> std::invoke_result_t<Work&> {
  using Result = std::invoke_result_t<Work&>;
  if (!WorkerMayRun()) return work();
  using Value = std::conditional_t<std::is_void_v<Result>, bool, Result>;
  struct Outcome {
    std::optional<Value> value;
    std::exception_ptr error;
  };
  auto outcome = std::make_shared<Outcome>();
  const auto done = StartOnWorker([outcome, work = std::move(work)]() mutable {
    try {
      if constexpr (std::is_void_v<Result>) {
        work();
        outcome->value.emplace(true);
      } else {
        outcome->value.emplace(work());
      }
    } catch (...) {
      outcome->error = std::current_exception();
    }
  });
  if (busy) *busy = done;
  try {
    WaitReleased([&](std::chrono::milliseconds slice) { return done->WaitFor(slice); });
  } catch (...) {
    StartOnWorker([dropped = std::move(outcome)] {  // there, after the work
      if (dropped->error) LogLeftError(dropped->error);
    });
    throw;
  }
  if (busy && *busy == done) busy->reset();
  if (outcome->error) std::rethrow_exception(outcome->error);
  if constexpr (!std::is_void_v<Result>) return std::move(*outcome->value);
}

// LeavableReleased, called with the GIL held.
template <typename Work>
auto Leavable(Work work) -> std::invoke_result_t<Work&> {
  py::gil_scoped_release release;
  return LeavableReleased(std::move(work));
}

}  // namespace stoker::python

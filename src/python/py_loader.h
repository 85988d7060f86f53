// PyLoader: the Loader as the module _stoker holds it, with what Python needs around it: calls
// serialized (one at a time, each waiting for the one before, the GIL released meanwhile), the
// batch waited for in slices between which the signal handlers run (Ctrl-C reaches the trainer
// while storage is slow), the batch handed over as a dict of numpy arrays that own the loader's
// buffers (or of what a converter the package gives makes of them: torch tensors that share
// them), its piece trace when asked for. No libtorch: any PyTorch the caller has takes the arrays.
// stoker_module.cc binds it as _stoker.Loader; the run session's binding (session_binding.h) takes
// its batches through it.
#pragma once

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "stoker/loader.h"
#include "stoker/trace.h"

namespace stoker::python {

namespace py = pybind11;

// Ends `loader` (its reading thread, its checkpoint writer, its communicator) on a thread of its
// own, so that a read that storage holds up does not hold up the caller.
void EndOnItsOwnThread(std::unique_ptr<Loader> loader);
// Waits (the GIL released) until every loader handed to EndOnItsOwnThread has ended: at exit,
// before MPI is finalized.
void WaitForEndedLoaders();

// How long a call waits before it lets the signal handlers run: well within a second.
constexpr std::chrono::milliseconds kSlice{50};

MPI_Comm CommOf(int64_t fortran_handle);

// Runs the signal handlers (main thread only; elsewhere nothing to do); a handler's exception,
// KeyboardInterrupt above all, propagates. Called with the GIL released.
void RunSignalHandlers();

// The keys of a batch dict and the dataset names, as Python strings. At namespace scope: nested
// in PyLoader, clang 14 would not yet see it default-constructible in std::optional's traits.
struct BatchKeys {
  py::str tokens{"tokens"}, input_ids{"input_ids"}, labels{"labels"}, step{"step"},
      dataset_tokens{"dataset_tokens"}, position_ids{"position_ids"}, cu_seqlens{"cu_seqlens"},
      max_seqlen{"max_seqlen"}, segment_ids{"segment_ids"}, loss_mask{"loss_mask"};
  std::vector<py::str> datasets;
};

// What hands over the next batch, waiting at most the time given (Loader::TryNext).
using TakeBatch = std::function<bool(std::chrono::milliseconds, std::optional<Batch>*)>;

// The Loader, its piece trace (for `stoker audit`) when asked for, the batches taken since it
// started, and the address of the last batch's token buffer (for the package's test that the
// tensor holds that very memory). The trace opens at the first batch, where the loader starts
// from: a resume in place (Resume) before it moves no earlier run's trace aside.
class PyLoader {
 public:
  // Collective over `comm`; called with the GIL released.
  PyLoader(int64_t comm, const LoaderConfig& config, std::string trace_dir);
  // As Close() without waiting for the last save: the Loader's own end waits for it, on its
  // thread.
  ~PyLoader();
  PyLoader(const PyLoader&) = delete;
  PyLoader& operator=(const PyLoader&) = delete;

  // Waits for the last save (raising its error), then ends the Loader on a thread of its own
  // (EndOnItsOwnThread) and returns: a read that storage holds up does not hold up the caller.
  // Every later call but Close() raises ConfigError. Collective, as the Loader's end is.
  void Close();

  // What each array of a batch becomes: None (the array as it is), or a callable of C code
  // (torch.from_numpy) applied to it: no Python bytecode runs between the batch taken and the
  // dict handed over, so no signal handler can lose it. With the GIL held.
  void SetConvert(py::object convert) { convert_ = std::move(convert); }

  // Runs `work()` with the GIL released and this loader's lock held, waiting for the lock in
  // slices between which the signal handlers run.
  template <typename Work>
  auto Locked(Work&& work) {
    py::gil_scoped_release release;
    std::unique_lock lock(mutex_, std::defer_lock);
    while (!lock.try_lock_for(kSlice)) RunSignalHandlers();
    return work();
  }

  // The loader's next batch; with `take`, the one it hands over (a run session's, which times
  // and traces it).
  py::dict Next(const TakeBatch& take = {});
  // Collective: goes on from `step_dir`, or from this rank's encoded `state` when it is not
  // empty (LoaderConfig::resume_state), with a new Loader; the old one stays as it was if that
  // fails. Before the first batch only (the package checks).
  void Resume(const std::string& step_dir, const std::string& state);
  // The step saved.
  uint64_t Save(const std::string& step_dir);

  // The Loader; ConfigError once closed.
  Loader& loader();
  bool closed() const { return loader_ == nullptr; }
  uint64_t taken() const { return taken_; }
  uintptr_t last_tokens_buffer() const { return last_tokens_buffer_; }

 private:
  // The batch as the package hands it over (stoker/loader.py documents the keys). The keys and
  // the dataset names are Python strings made once.
  py::dict BatchDict(Batch&& batch);
  // `array` as handed over: converted, or itself.
  py::object Hand(const py::object& array) const;
  void MakeKeys();

  int64_t comm_;  // the caller's communicator, for the trace's collective opening
  LoaderConfig config_;
  std::string trace_dir_;
  // Held by the call using loader_; recursive: a run session's save calls the trainer's Python
  // function with it held, which may read the loader (its step, say).
  std::recursive_timed_mutex mutex_;
  std::unique_ptr<Loader> loader_;
  std::optional<PieceTraceWriter> trace_;
  bool trace_opened_ = false;
  uint64_t taken_ = 0;  // batches taken from this object (a Resume included)
  uintptr_t last_tokens_buffer_ = 0;
  std::optional<BatchKeys> keys_;  // made with the GIL held, on first use
  py::object convert_;             // None or a callable
};

}  // namespace stoker::python

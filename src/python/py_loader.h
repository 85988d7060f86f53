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
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stoker/loader.h"
#include "stoker/trace.h"
#include "waiting.h"

namespace stoker::python {

namespace py = pybind11;

MPI_Comm CommOf(int64_t fortran_handle);

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
  // Collective over `comm`, made Leavable (Ctrl-C leaves it); called with the GIL held.
  PyLoader(int64_t comm, const LoaderConfig& config, std::string trace_dir);
  // As Close() without waiting for the last save: the Loader's own end waits for it, on its
  // thread.
  ~PyLoader();
  PyLoader(const PyLoader&) = delete;
  PyLoader& operator=(const PyLoader&) = delete;

  // Waits in slices for the last save (raising its error), then ends the Loader on a thread of its
  // own (EndOnItsOwnThread) and returns: a read that storage holds up does not hold up the caller.
  // Every later call but Close() raises ConfigError. Collective, as the Loader's end is.
  void Close();

  // What each array of a batch becomes: None (the array as it is), or a callable of C code
  // (torch.from_numpy) applied to it: no Python bytecode runs between the batch taken and the
  // dict handed over, so no signal handler can lose it. With the GIL held.
  void SetConvert(py::object convert) { convert_ = std::move(convert); }

  // Runs `work()` with the GIL released and this loader's lock held, waiting for the lock, and
  // for the Loader's work on the worker (OnWorker, running or left by Ctrl-C), in slices between
  // which the signal handlers run. A signal handler's call on this loader during that wait (the
  // lock is recursive) waits for the work too.
  template <typename Work>
  auto Locked(Work&& work) {
    py::gil_scoped_release release;
    std::unique_lock lock(mutex_, std::defer_lock);
    WaitReleased([&](std::chrono::milliseconds slice) { return lock.try_lock_for(slice); });
    if (const std::shared_ptr<WorkDone> busy = busy_) {
      WaitReleased([&](std::chrono::milliseconds slice) { return busy->WaitFor(slice); });
      if (busy_ == busy) busy_.reset();
    }
    return work();
  }
  // `work(loader)`, a call that waits on storage or on the other ranks and uses the Loader, on
  // the worker with the lock held (LeavableReleased): Ctrl-C leaves it to its end there, and
  // every call on this loader waits for that end.
  template <typename Work>
  auto OnWorker(Work work) {
    return Locked([&] {
      Loader* const on = &loader();
      return LeavableReleased([on, work = std::move(work)] { return work(*on); }, &busy_);
    });
  }

  // The loader's next batch; with `take`, the one it hands over (a run session's, which times
  // and traces it).
  py::dict Next(const TakeBatch& take = {});
  // Collective: goes on from `step_dir`, or from this rank's encoded `state` when it is not
  // empty (LoaderConfig::resume_state), with a new Loader (Leavable: Ctrl-C leaves it); the old
  // one stays as it was if that fails. `named_dir`: the step folder of the state resumed from,
  // for saved() ("" for none). Before the first batch only: ConfigError after one.
  void Resume(const std::string& step_dir, const std::string& state, const std::string& named_dir);
  // Loader::Save, after waiting in slices for the previous write; the step saved.
  uint64_t Save(const std::string& step_dir);
  // Waits in slices for the last save's write; raises its error.
  void WaitForSave();
  // Loader::SetWeights, OnWorker.
  void SetWeights(const std::map<std::string, double>& weights);

  // The step folder of the state at the current step and that step: the last save's or the
  // folder resumed from, recorded before the call that made it returns (no signal handler runs
  // between), forgotten when a save fails. Why it was forgotten, in save_failed().
  const std::optional<std::pair<std::string, uint64_t>>& saved() const { return saved_; }
  const std::string& save_failed() const { return save_failed_; }

  // The Loader; ConfigError once closed.
  Loader& loader();
  bool closed() const { return loader_ == nullptr; }
  uintptr_t last_tokens_buffer() const { return last_tokens_buffer_; }

 private:
  // The batch as the package hands it over (stoker/loader.py documents the keys). The keys and
  // the dataset names are Python strings made once.
  py::dict BatchDict(Batch&& batch);
  // `array` as handed over: converted, or itself.
  py::object Hand(const py::object& array) const;
  void MakeKeys();
  // `call()`, noting the error of a save it raises (saved() forgotten, save_failed() why).
  template <typename Call>
  auto NotingFailedSave(Call&& call);
  // The Loader's last write, waited for in slices; with the lock held, the GIL released.
  void WaitForWrite();

  int64_t comm_;  // the caller's communicator, for the trace's collective opening
  LoaderConfig config_;
  std::string trace_dir_;
  // Held by the call using loader_; recursive: a run session's save calls the trainer's Python
  // function with it held, which may read the loader (its step, say).
  std::recursive_timed_mutex mutex_;
  std::unique_ptr<Loader> loader_;
  std::shared_ptr<WorkDone> busy_;  // the Loader's work on the worker, until it is done
  std::optional<PieceTraceWriter> trace_;
  bool trace_opened_ = false;
  uint64_t taken_ = 0;  // batches taken from this object (a Resume included)
  uintptr_t last_tokens_buffer_ = 0;
  std::optional<std::pair<std::string, uint64_t>> saved_;
  std::string save_failed_;
  std::optional<BatchKeys> keys_;  // made with the GIL held, on first use
  py::object convert_;             // None or a callable
};

}  // namespace stoker::python

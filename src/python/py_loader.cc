#include "py_loader.h"

#include <pybind11/numpy.h>

#include <condition_variable>
#include <memory>
#include <thread>

#include "stoker/error.h"

namespace stoker::python {

namespace {

// An array of `shape` that owns `values` (moved, not copied: a capsule frees them with the
// array); None when `values` is empty but `shape` is not (a field not computed).
template <typename T>
py::object Owning(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
  py::ssize_t size = 1;
  for (py::ssize_t n : shape) size *= n;
  if (values.empty() && size > 0) return py::none();
  auto owner = std::make_unique<std::vector<T>>(std::move(values));
  const T* data = owner->data();
  py::capsule free(owner.get(), [](void* p) { delete static_cast<std::vector<T>*>(p); });
  owner.release();  // the capsule owns it now
  return py::array_t<T>(std::move(shape), data, free);
}

// The rows of `tokens` (int64 [rows, row_tokens]) from column `first`, row_tokens - 1 wide: a
// view that keeps `tokens` alive.
py::object RowsFrom(const py::object& tokens, py::ssize_t first) {
  if (tokens.is_none()) return py::none();
  const auto rows = py::array_t<int64_t>::ensure(tokens);
  const py::ssize_t width = rows.shape(1) - 1;
  return py::array_t<int64_t>({rows.shape(0), width}, {rows.strides(0), rows.strides(1)},
                              rows.data() + first, tokens);
}

// The loaders ending on threads of their own.
struct Ending {
  std::mutex mutex;
  std::condition_variable ended;
  uint64_t running = 0;
};

Ending& EndingLoaders() {
  static Ending* ending = new Ending;  // never destroyed: a thread may end after static teardown
  return *ending;
}

}  // namespace

void EndOnItsOwnThread(std::unique_ptr<Loader> loader) {
  if (!loader) return;
  Ending& ending = EndingLoaders();
  {
    std::lock_guard lock(ending.mutex);
    ++ending.running;
  }
  std::thread([loader = std::move(loader), &ending]() mutable {
    loader.reset();
    std::lock_guard lock(ending.mutex);
    --ending.running;
    ending.ended.notify_all();
  }).detach();
}

void WaitForEndedLoaders() {
  py::gil_scoped_release release;
  Ending& ending = EndingLoaders();
  std::unique_lock lock(ending.mutex);
  ending.ended.wait(lock, [&] { return ending.running == 0; });
}

MPI_Comm CommOf(int64_t fortran_handle) {
  return MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_handle));
}

void RunSignalHandlers() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

PyLoader::PyLoader(int64_t comm, const LoaderConfig& config, std::string trace_dir)
    : comm_(comm),
      config_(config),
      trace_dir_(std::move(trace_dir)),
      loader_(std::make_unique<Loader>(CommOf(comm), config)) {}

PyLoader::~PyLoader() { EndOnItsOwnThread(std::move(loader_)); }

void PyLoader::Close() {
  EndOnItsOwnThread(Locked([&] {
    if (loader_) loader_->WaitForSave();
    return std::move(loader_);
  }));
}

Loader& PyLoader::loader() {
  if (!loader_) throw ConfigError("this loader was closed (close()): make another one");
  return *loader_;
}

py::dict PyLoader::Next(const TakeBatch& take) {
  std::optional<Batch> batch = Locked([&] {
    const uint64_t start = loader().step();
    std::optional<Batch> next;
    const auto taken = [&] { return take ? take(kSlice, &next) : loader_->TryNext(kSlice, &next); };
    while (!taken()) RunSignalHandlers();
    // Taken and counted: from here to the return no signal handler runs.
    if (!next) throw InternalError("the loader's stream ended");
    ++taken_;
    if (!trace_dir_.empty()) {
      if (!trace_opened_) {
        OpenPieceTrace(CommOf(comm_), *loader_, trace_dir_, start, &trace_);
        trace_opened_ = true;
      }
      if (trace_) trace_->Write(*next);  // in a layout, the replica's first rank writes
    }
    last_tokens_buffer_ = reinterpret_cast<uintptr_t>(next->tokens.data());
    return next;
  });
  return BatchDict(std::move(*batch));
}

void PyLoader::Resume(const std::string& step_dir, const std::string& state) {
  LoaderConfig config = config_;
  config.resume_from = state.empty() ? step_dir : "";
  config.resume_state = state;
  Locked([&] {
    loader();  // not closed
    auto resumed = std::make_unique<Loader>(CommOf(comm_), config);
    loader_.swap(resumed);
    config_ = config;
  });  // the old Loader goes here, outside the GIL
}

uint64_t PyLoader::Save(const std::string& step_dir) {
  return Locked([&] {
    loader().Save(step_dir);
    return loader_->step();
  });
}

py::object PyLoader::Hand(const py::object& array) const {
  return convert_.is_none() || array.is_none() ? array : convert_(array);
}

py::dict PyLoader::BatchDict(Batch&& batch) {
  if (!keys_) MakeKeys();
  const BatchKeys& k = *keys_;
  const auto rows = static_cast<py::ssize_t>(batch.rows);
  // Per input token: the whole row's inputs, or this rank's part of them (context parallelism).
  const py::ssize_t per_row = batch.inputs.empty() ? static_cast<py::ssize_t>(batch.row_tokens) - 1
                                                   : static_cast<py::ssize_t>(batch.inputs.size()) /
                                                         std::max<py::ssize_t>(rows, 1);
  const py::object tokens =
      Owning(std::move(batch.tokens), {rows, static_cast<py::ssize_t>(batch.row_tokens)});
  py::dict out;
  out[k.tokens] = Hand(tokens);
  if (batch.inputs.empty()) {
    out[k.input_ids] = Hand(RowsFrom(tokens, 0));
    out[k.labels] = Hand(RowsFrom(tokens, 1));
  } else {
    out[k.input_ids] = Hand(Owning(std::move(batch.inputs), {rows, per_row}));
    out[k.labels] = Hand(Owning(std::move(batch.labels), {rows, per_row}));
  }
  out[k.step] = batch.step;
  py::dict dataset_tokens;
  for (size_t d = 0; d < k.datasets.size(); ++d) {
    dataset_tokens[k.datasets[d]] = batch.dataset_tokens[d];
  }
  out[k.dataset_tokens] = dataset_tokens;
  Boundaries& b = batch.boundaries;
  if (!b.position_ids.empty()) {
    out[k.position_ids] = Hand(Owning(std::move(b.position_ids), {rows, per_row}));
  }
  if (!b.cu_seqlens.empty()) {
    const auto offsets = static_cast<py::ssize_t>(b.cu_seqlens.size());
    out[k.cu_seqlens] = Hand(Owning(std::move(b.cu_seqlens), {offsets}));
    out[k.max_seqlen] = b.max_seqlen;
  }
  if (!b.segment_ids.empty()) {
    out[k.segment_ids] = Hand(Owning(std::move(b.segment_ids), {rows, per_row}));
  }
  if (!b.loss_mask.empty())
    out[k.loss_mask] = Hand(Owning(std::move(b.loss_mask), {rows, per_row}));
  return out;
}

void PyLoader::MakeKeys() {
  keys_.emplace();
  for (const DatasetInfo& d : loader().corpus().datasets) keys_->datasets.emplace_back(d.name);
}

}  // namespace stoker::python

#include "py_loader.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <memory>

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

// The rows of `tokens` (int64 [rows, row_tokens]) without their last column: a view that keeps
// `tokens` alive.
py::object InputsView(const py::object& tokens) {
  if (tokens.is_none()) return py::none();
  const auto rows = py::array_t<int64_t>::ensure(tokens);
  const py::ssize_t width = rows.shape(1) - 1;
  return py::array_t<int64_t>({rows.shape(0), width}, {rows.strides(0), rows.strides(1)},
                              rows.data(), tokens);
}

// The labels of rows of `row_tokens` tokens: each row without its first token, in a buffer of
// their own (a trainer masks them in place, labels[loss_mask == 0] = -100, and its input_ids,
// views of the rows, stay as they were).
std::vector<int64_t> LabelsOf(const std::vector<int64_t>& tokens, size_t row_tokens) {
  if (row_tokens == 0) return {};
  std::vector<int64_t> labels;
  labels.reserve(tokens.size() / row_tokens * (row_tokens - 1));
  for (auto row = tokens.begin(); row != tokens.end(); row += row_tokens) {
    labels.insert(labels.end(), row + 1, row + row_tokens);
  }
  return labels;
}

// What makes a Loader of `config` over `comm` (on the worker: Leavable).
auto LoaderMaker(int64_t comm, const LoaderConfig& config) {
  return [comm, config] { return std::make_unique<Loader>(CommOf(comm), config); };
}

}  // namespace

MPI_Comm CommOf(int64_t fortran_handle) {
  return MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_handle));
}

PyLoader::PyLoader(int64_t comm, const LoaderConfig& config, std::string trace_dir)
    : comm_(comm),
      config_(config),
      trace_dir_(std::move(trace_dir)),
      loader_(Leavable(LoaderMaker(comm, config))) {
  if (!config.resume_from.empty()) saved_.emplace(config.resume_from, loader_->step());
}

PyLoader::~PyLoader() {
  if (busy_) {  // ended on the worker, after the work left there
    StartOnWorker([ended = std::shared_ptr<Loader>(std::move(loader_))] {});
  } else {
    EndOnItsOwnThread(std::move(loader_));
  }
}

template <typename Call>
auto PyLoader::NotingFailedSave(Call&& call) {
  try {
    return call();
  } catch (const Error& error) {
    save_failed_ = fmt::format(
        "{} failed ({})",
        saved_ ? fmt::format("the save of step {} into {}", saved_->second, saved_->first)
               : "a save",
        error.what());
    saved_.reset();
    throw;
  }
}

void PyLoader::WaitForWrite() {
  NotingFailedSave([&] {
    WaitReleased([&](std::chrono::milliseconds slice) { return loader().TryWaitForSave(slice); });
  });
}

void PyLoader::Close() {
  EndOnItsOwnThread(Locked([&] {
    if (loader_) WaitForWrite();
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
    if (next->inputs.empty()) next->labels = LabelsOf(next->tokens, next->row_tokens);  // no GIL
    return next;
  });
  return BatchDict(std::move(*batch));
}

void PyLoader::Resume(const std::string& step_dir, const std::string& state,
                      const std::string& named_dir) {
  EndOnItsOwnThread(Locked([&] {
    loader();  // not closed
    if (taken_ > 0) {
      throw ConfigError(fmt::format(
          "load_state_dict() after {} batches were taken: call it before iterating (the "
          "batches already handed out would be given again)",
          taken_));
    }
    LoaderConfig config = config_;
    config.resume_from = state.empty() ? step_dir : "";
    config.resume_state = state;
    std::unique_ptr<Loader> resumed = LeavableReleased(LoaderMaker(comm_, config), &busy_);
    loader_.swap(resumed);
    config_ = config;
    saved_.reset();
    if (!named_dir.empty()) saved_.emplace(named_dir, loader_->step());
    save_failed_.clear();
    return resumed;  // the Loader it went on from
  }));
}

uint64_t PyLoader::Save(const std::string& step_dir) {
  return Locked([&] {
    WaitForWrite();
    NotingFailedSave([&] { loader().Save(step_dir); });
    saved_.emplace(step_dir, loader_->step());
    return loader_->step();
  });
}

void PyLoader::SetWeights(const std::map<std::string, double>& weights) {
  OnWorker([weights](Loader& loader) { loader.SetWeights(weights); });
}

void PyLoader::WaitForSave() {
  Locked([&] { WaitForWrite(); });
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
  out[k.input_ids] = Hand(batch.inputs.empty() ? InputsView(tokens)
                                               : Owning(std::move(batch.inputs), {rows, per_row}));
  out[k.labels] = Hand(Owning(std::move(batch.labels), {rows, per_row}));
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

#include "py_loader.h"

#include <torch/csrc/utils/pybind.h>

#include "stoker/error.h"

namespace stoker::python {

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

py::dict PyLoader::Next(const TakeBatch& take) {
  std::optional<TensorBatch> batch = Locked([&] {
    const uint64_t start = loader_->step();
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
    return std::optional<TensorBatch>(ToTensors(std::move(*next)));
  });
  return BatchDict(*batch);
}

void PyLoader::Resume(const std::string& step_dir) {
  LoaderConfig config = config_;
  config.resume_from = step_dir;
  Locked([&] {
    auto resumed = std::make_unique<Loader>(CommOf(comm_), config);
    loader_.swap(resumed);
    config_ = config;
  });  // the old Loader goes here, outside the GIL
}

uint64_t PyLoader::Save(const std::string& step_dir) {
  return Locked([&] {
    loader_->Save(step_dir);
    return loader_->step();
  });
}

py::dict PyLoader::BatchDict(const TensorBatch& batch) {
  if (!keys_) MakeKeys();
  const BatchKeys& k = *keys_;
  py::dict out;
  out[k.tokens] = batch.tokens;
  out[k.input_ids] = batch.inputs();
  out[k.labels] = batch.labels();
  out[k.step] = batch.step;
  py::dict dataset_tokens;
  for (size_t d = 0; d < k.datasets.size(); ++d) {
    dataset_tokens[k.datasets[d]] = batch.dataset_tokens[d];
  }
  out[k.dataset_tokens] = dataset_tokens;
  if (batch.position_ids.defined()) out[k.position_ids] = batch.position_ids;
  if (batch.cu_seqlens.defined()) {
    out[k.cu_seqlens] = batch.cu_seqlens;
    out[k.max_seqlen] = batch.max_seqlen;
  }
  if (batch.segment_ids.defined()) out[k.segment_ids] = batch.segment_ids;
  if (batch.loss_mask.defined()) out[k.loss_mask] = batch.loss_mask;
  return out;
}

void PyLoader::MakeKeys() {
  keys_.emplace();
  for (const DatasetInfo& d : loader_->corpus().datasets) keys_->datasets.emplace_back(d.name);
}

}  // namespace stoker::python

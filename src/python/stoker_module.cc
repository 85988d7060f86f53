// _stoker: the C++ side of the Python package `stoker` (src/python/stoker/ is the side users see,
// and documents every call). It binds LoaderConfig (config_binding.h) and the Loader, turns
// stoker's errors into the package's exceptions (stoker.Error and its kinds), and hands each batch
// over as a dict of torch tensors that own the loader's buffers: no copy.
//
// Python threads may share a loader: its calls are serialized (one at a time, each waiting for
// the one before). Every call that waits -- construction and the resume helpers, which are
// collective; next(); save(), which waits for the previous write; wait_for_save(); set_weights()
// -- releases the GIL meanwhile, and next() waits in slices of kSlice, between which the signal
// handlers run: Ctrl-C reaches the trainer while storage is slow, and a batch interrupted so is
// not taken (the next call hands it over).
//
// Built on the public headers only, as a user of the library would build it. The communicator
// comes from mpi4py as its Fortran handle (Comm.py2f()): mpi4py and stoker share Debian's Open MPI.
#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "config_binding.h"
#include "stoker/error.h"
#include "stoker/loader.h"
#include "stoker/log.h"
#include "stoker/torch.h"
#include "stoker/trace.h"
#include "stoker/weights.h"

namespace stoker::python {
namespace {

// How long a call waits before it lets the signal handlers run: well within a second.
constexpr std::chrono::milliseconds kSlice{50};

MPI_Comm CommOf(int64_t fortran_handle) {
  return MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_handle));
}

// Runs the signal handlers (main thread only; elsewhere nothing to do); a handler's exception,
// KeyboardInterrupt above all, propagates. Called with the GIL released.
void RunSignalHandlers() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

// The keys of a batch dict and the dataset names, as Python strings. At namespace scope: nested
// in PyLoader, clang 14 would not yet see it default-constructible in std::optional's traits.
struct BatchKeys {
  py::str tokens{"tokens"}, input_ids{"input_ids"}, labels{"labels"}, step{"step"},
      dataset_tokens{"dataset_tokens"}, position_ids{"position_ids"}, cu_seqlens{"cu_seqlens"},
      max_seqlen{"max_seqlen"}, segment_ids{"segment_ids"}, loss_mask{"loss_mask"};
  std::vector<py::str> datasets;
};

// The Loader, its piece trace (for `stoker audit`) when asked for, the batches taken since it
// started, and the address of the last batch's token buffer (for the package's test that the
// tensor holds that very memory). The trace opens at the first batch, where the loader starts
// from: a resume in place (Resume) before it moves no earlier run's trace aside.
class PyLoader {
 public:
  // Collective over `comm`.
  PyLoader(int64_t comm, const LoaderConfig& config, std::string trace_dir)
      : comm_(comm),
        config_(config),
        trace_dir_(std::move(trace_dir)),
        loader_(std::make_unique<Loader>(CommOf(comm), config)) {}

  // Runs `work()` with the GIL released and this loader's lock held, waiting for the lock in
  // slices between which the signal handlers run.
  template <typename Work>
  auto Locked(Work&& work) {
    py::gil_scoped_release release;
    std::unique_lock lock(mutex_, std::defer_lock);
    while (!lock.try_lock_for(kSlice)) RunSignalHandlers();
    return work();
  }

  py::dict Next() {
    std::optional<TensorBatch> batch = Locked([&] {
      const uint64_t start = loader_->step();
      std::optional<Batch> next;
      while (!loader_->TryNext(kSlice, &next)) RunSignalHandlers();
      // Taken and counted: from here to the return no signal handler runs.
      if (!next) throw InternalError("the loader's stream ended");
      ++taken_;
      if (!trace_dir_.empty()) {
        if (!trace_) OpenPieceTrace(CommOf(comm_), trace_dir_, start, &trace_);
        trace_->Write(*next);
      }
      last_tokens_buffer_ = reinterpret_cast<uintptr_t>(next->tokens.data());
      return std::optional<TensorBatch>(ToTensors(std::move(*next)));
    });
    return BatchDict(*batch);
  }

  // Collective: goes on from `step_dir` with a new Loader; the old one stays as it was if that
  // fails. Before the first batch only (the package checks).
  void Resume(const std::string& step_dir) {
    LoaderConfig config = config_;
    config.resume_from = step_dir;
    Locked([&] {
      auto resumed = std::make_unique<Loader>(CommOf(comm_), config);
      loader_.swap(resumed);
      config_ = config;
    });  // the old Loader goes here, outside the GIL
  }

  // The step saved.
  uint64_t Save(const std::string& step_dir) {
    return Locked([&] {
      loader_->Save(step_dir);
      return loader_->step();
    });
  }

  // The batch as the package hands it over (stoker/loader.py documents the keys). The keys and
  // the dataset names are Python strings made once.
  py::dict BatchDict(const TensorBatch& batch) {
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

  Loader& loader() { return *loader_; }
  uint64_t taken() const { return taken_; }
  uintptr_t last_tokens_buffer() const { return last_tokens_buffer_; }

 private:
  void MakeKeys() {
    keys_.emplace();
    for (const DatasetInfo& d : loader_->corpus().datasets) keys_->datasets.emplace_back(d.name);
  }

  int64_t comm_;  // the caller's communicator, for the trace's collective opening
  LoaderConfig config_;
  std::string trace_dir_;
  std::timed_mutex mutex_;  // held by the call using loader_
  std::unique_ptr<Loader> loader_;
  std::optional<PieceTraceWriter> trace_;
  uint64_t taken_ = 0;  // batches taken from this object (a Resume included)
  uintptr_t last_tokens_buffer_ = 0;
  std::optional<BatchKeys> keys_;  // made with the GIL held, on first use
};

// The largest vocab_size attribute of the corpus's shards; none when no shard has one.
std::optional<int64_t> CorpusVocab(const Loader& loader) {
  std::optional<int64_t> vocab;
  for (const ShardInfo& shard : loader.corpus().shards) {
    if (shard.vocab_size) vocab = std::max(vocab.value_or(0), *shard.vocab_size);
  }
  return vocab;
}

// The weights of the next batch by dataset name.
std::map<std::string, double> WeightsByName(const Loader& loader) {
  std::map<std::string, double> out;
  const std::vector<double> weights = loader.weights();
  for (size_t d = 0; d < weights.size(); ++d) {
    out[loader.corpus().datasets[d].name] = weights[d];
  }
  return out;
}

void BindErrors(py::module_& m) {
  // Translators are tried newest first: the kinds after their base.
  static py::exception<Error> error(m, "Error");
  py::register_exception<ConfigError>(m, "ConfigError", error.ptr());
  py::register_exception<DataError>(m, "DataError", error.ptr());
  py::register_exception<IoError>(m, "IoError", error.ptr());
  py::register_exception<MpiError>(m, "MpiError", error.ptr());
  py::register_exception<Hdf5Error>(m, "Hdf5Error", error.ptr());
  py::register_exception<InternalError>(m, "InternalError", error.ptr());
}

// The Loader's calls that read what next(), save() and set_weights() change, or wait, go through
// Locked; the corpus, ids, rank and world size do not change.
void BindLoader(py::module_& m) {
  using Self = PyLoader;
  py::class_<PyLoader>(m, "Loader")
      .def(py::init<int64_t, const LoaderConfig&, std::string>(),
           py::call_guard<py::gil_scoped_release>())
      .def("next", &Self::Next)
      .def("__next__", &Self::Next)
      .def("__iter__", [](py::object self) { return self; })
      .def("resume", &Self::Resume)
      .def("save", &Self::Save)
      .def("wait_for_save", [](Self& s) { s.Locked([&] { s.loader().WaitForSave(); }); })
      .def_property_readonly("step",
                             [](Self& s) { return s.Locked([&] { return s.loader().step(); }); })
      .def_property_readonly("taken", [](Self& s) { return s.Locked([&] { return s.taken(); }); })
      .def_property_readonly("rank", [](Self& s) { return s.loader().rank(); })
      .def_property_readonly("world_size", [](Self& s) { return s.loader().world_size(); })
      .def_property_readonly(
          "weights", [](Self& s) { return s.Locked([&] { return WeightsByName(s.loader()); }); })
      .def_property_readonly("schedule",
                             [](Self& s) {
                               const WeightSchedule schedule =
                                   s.Locked([&] { return s.loader().schedule(); });
                               return ScheduleToPython(schedule);
                             })
      // Converted with the GIL held; the reading pipeline is rebuilt (its thread stopped, the
      // batches read ahead dropped) under the lock.
      .def("set_weights",
           [](Self& s, py::handle weights) {
             const std::map<std::string, double> converted = WeightsOf(weights, "weights");
             s.Locked([&] { s.loader().SetWeights(converted); });
           })
      .def_property_readonly("eos_id", [](Self& s) { return s.loader().eos_id(); })
      .def_property_readonly("bos_id", [](Self& s) { return s.loader().bos_id(); })
      .def_property_readonly("vocab_size", [](Self& s) { return CorpusVocab(s.loader()); })
      .def_property_readonly("corpus_fingerprint",
                             [](Self& s) { return s.loader().corpus().fingerprint; })
      .def_property_readonly("last_tokens_buffer", &Self::last_tokens_buffer);
}

void BindFunctions(py::module_& m) {
  m.def("init_logging", [](int rank) { InitLogging(rank); });
  m.def("parse_weights", [](const std::string& text) { return ParseWeights(text); });
  m.def("parse_weight_schedule",
        [](const std::string& text) { return ScheduleToPython(ParseWeightSchedule(text)); });
  m.def("weight_schedule_argument",
        [](const std::string& value) { return ScheduleToPython(WeightScheduleArgument(value)); });
  m.def(
      "find_resume_step",
      [](int64_t comm, const std::string& dir, const std::vector<std::string>& required) {
        return Loader::FindResumeStep(CommOf(comm), dir, required);
      },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "prepare_resume",
      [](int64_t comm, const std::string& dir, const std::vector<std::string>& required) {
        return Loader::PrepareResume(CommOf(comm), dir, required);
      },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "prepare_fresh_start",
      [](int64_t comm, const std::string& dir, bool start_over) {
        Loader::PrepareFreshStart(CommOf(comm), dir, start_over);
      },
      py::call_guard<py::gil_scoped_release>());
}

}  // namespace
}  // namespace stoker::python

PYBIND11_MODULE(_stoker, m) {
  m.doc() = "The C++ side of the stoker package; use `import stoker` (help(stoker.Loader)).";
  stoker::python::BindErrors(m);
  stoker::python::BindConfig(m);
  stoker::python::BindLoader(m);
  stoker::python::BindFunctions(m);
}

// _stoker: the C++ side of the Python package `stoker` (src/python/stoker/ is the side users see,
// and documents every call). It binds LoaderConfig and the Loader, turns stoker's errors into the
// package's exceptions (stoker.Error and its kinds), and hands each batch over as a dict of torch
// tensors that own the loader's buffers: no copy. Calls that wait (construction and the resume
// helpers, which are collective; next(); wait_for_save(); set_weights()) release the GIL
// meanwhile.
//
// Built on the public headers only, as a user of the library would build it. The communicator
// comes from mpi4py as its Fortran handle (Comm.py2f()): mpi4py and stoker share Debian's Open MPI.
#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stoker/error.h"
#include "stoker/io_engine.h"
#include "stoker/loader.h"
#include "stoker/log.h"
#include "stoker/torch.h"
#include "stoker/trace.h"
#include "stoker/weights.h"

namespace py = pybind11;

namespace stoker::python {
namespace {

MPI_Comm CommOf(int64_t fortran_handle) {
  return MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_handle));
}

// The keys of a batch dict and the dataset names, as Python strings. At namespace scope: nested
// in PyLoader, clang 14 would not yet see it default-constructible in std::optional's traits.
struct BatchKeys {
  py::str tokens{"tokens"}, input_ids{"input_ids"}, labels{"labels"}, step{"step"},
      dataset_tokens{"dataset_tokens"}, position_ids{"position_ids"}, cu_seqlens{"cu_seqlens"},
      max_seqlen{"max_seqlen"}, segment_ids{"segment_ids"}, loss_mask{"loss_mask"};
  std::vector<py::str> datasets;
};

// The Loader, its piece trace (for `stoker audit`) when asked for, and the address of the last
// batch's token buffer (for the package's test that the tensor holds that very memory).
class PyLoader {
 public:
  // Collective over `comm`, the trace's opening too.
  PyLoader(int64_t comm, const LoaderConfig& config, const std::string& trace_dir)
      : loader_(CommOf(comm), config) {
    if (!trace_dir.empty()) OpenPieceTrace(CommOf(comm), trace_dir, loader_.step(), &trace_);
  }

  py::dict Next() {
    std::optional<TensorBatch> batch;
    {
      py::gil_scoped_release release;
      std::optional<Batch> next = loader_.Next();
      if (!next) throw InternalError("the loader's stream ended");
      if (trace_) trace_->Write(*next);
      last_tokens_buffer_ = reinterpret_cast<uintptr_t>(next->tokens.data());
      batch = ToTensors(std::move(*next));
    }
    return BatchDict(*batch);
  }

  // The batch as the package hands it over (stoker/loader.py documents the keys). The keys and
  // the dataset names are Python strings made once.
  py::dict BatchDict(const TensorBatch& batch) {
    if (!keys_) MakeKeys();
    const Keys& k = *keys_;
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

  Loader& loader() { return loader_; }
  uintptr_t last_tokens_buffer() const { return last_tokens_buffer_; }

 private:
  using Keys = BatchKeys;
  void MakeKeys() {
    keys_.emplace();
    for (const DatasetInfo& d : loader_.corpus().datasets) keys_->datasets.emplace_back(d.name);
  }

  Loader loader_;
  std::optional<PieceTraceWriter> trace_;
  uintptr_t last_tokens_buffer_ = 0;
  std::optional<Keys> keys_;  // made with the GIL held, on first use
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

// Weight schedules in Python are lists of dicts {"step": int, "ramp": bool, "weights": {name:
// weight}}: what Loader(weight_schedule=[...]) takes, Loader.schedule gives and JSON holds as it
// is. Entries from Python are checked here, with the GIL held, so that a wrong type is a
// ConfigError naming the entry rather than pybind11's TypeError; the schedule's shape (steps
// increasing, weights >= 0) is LoaderConfig::Problems's, as for the C++ loader.
py::dict EntryToPython(const WeightScheduleEntry& entry) {
  py::dict out;
  out["step"] = entry.step;
  out["ramp"] = entry.ramp;
  out["weights"] = entry.weights;
  return out;
}

py::list ScheduleToPython(const WeightSchedule& schedule) {
  py::list out;
  for (const WeightScheduleEntry& entry : schedule) out.append(EntryToPython(entry));
  return out;
}

std::string Repr(py::handle value) { return py::repr(value).cast<std::string>(); }

// An integer in [0, 2^64), a numpy one too; True and False are ints to Python but no step.
uint64_t StepOf(py::handle value, const std::string& where) {
  if (!py::isinstance<py::bool_>(value)) {
    if (PyObject* index = PyNumber_Index(value.ptr())) {
      try {
        return py::reinterpret_steal<py::int_>(index).cast<uint64_t>();
      } catch (const py::cast_error&) {  // below 0 or from 2^64 on
      }
    } else {
      PyErr_Clear();
    }
  }
  throw ConfigError(where + ": step " + Repr(value) + " is not a whole number from 0 to 2^64 - 1");
}

// An int or a float (a numpy one too); True and False are numbers to Python but no weight.
double WeightOf(py::handle name, py::handle weight, const std::string& where) {
  if (!py::isinstance<py::bool_>(weight)) {
    try {
      return weight.cast<double>();
    } catch (const py::cast_error&) {
    }
  }
  throw ConfigError(where + ": the weight of " + Repr(name) + ", " + Repr(weight) +
                    ", is not a number");
}

// A dict of dataset name -> weight (the loader checks the names and that weights are >= 0).
std::map<std::string, double> WeightsOf(py::handle value, const std::string& where) {
  if (!py::isinstance<py::dict>(value)) {
    throw ConfigError(where + ": " + Repr(value) + " is not a dict of dataset name -> weight");
  }
  std::map<std::string, double> weights;
  for (const auto& [name, weight] : value.cast<py::dict>()) {
    if (!py::isinstance<py::str>(name)) {
      throw ConfigError(where + ": dataset name " + Repr(name) + " is not a string");
    }
    weights[name.cast<std::string>()] = WeightOf(name, weight, where);
  }
  return weights;
}

WeightScheduleEntry EntryFromPython(py::handle item, size_t number) {
  const std::string where = "weight_schedule entry " + std::to_string(number) + " " + Repr(item);
  if (!py::isinstance<py::dict>(item)) {
    throw ConfigError(where + ": not a dict {'step': ..., 'weights': {...}, 'ramp': ...}");
  }
  const auto entry = item.cast<py::dict>();
  for (const auto& [key, value] : entry) {
    const std::string name = py::str(key);
    if (name != "step" && name != "weights" && name != "ramp") {
      throw ConfigError(where + ": unknown key " + Repr(key) + " (step, weights, ramp)");
    }
  }
  if (!entry.contains("step") || !entry.contains("weights")) {
    throw ConfigError(where + ": needs 'step' and 'weights' ('ramp' is optional)");
  }
  WeightScheduleEntry out{.step = StepOf(entry["step"], where)};
  if (entry.contains("ramp")) {
    const py::handle ramp = entry["ramp"];
    if (!py::isinstance<py::bool_>(ramp)) {
      throw ConfigError(where + ": ramp " + Repr(ramp) + " is not True or False");
    }
    out.ramp = ramp.cast<bool>();
  }
  out.weights = WeightsOf(entry["weights"], where + ": weights");
  return out;
}

WeightSchedule ScheduleFromPython(py::handle value) {
  if (!py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value)) {
    throw ConfigError("weight_schedule " + Repr(value) + " is not a list of entries");
  }
  WeightSchedule schedule;
  for (const py::handle item : value) {
    schedule.push_back(EntryFromPython(item, schedule.size() + 1));
  }
  return schedule;
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

// A LoaderConfig field of an enum type, read and written by its name.
template <typename Enum, typename NameOf, typename Parse>
void NamedField(py::class_<LoaderConfig>& c, const char* name, Enum LoaderConfig::*field,
                NameOf name_of, Parse parse) {
  c.def_property(
      name, [=](const LoaderConfig& self) { return std::string(name_of(self.*field)); },
      [=](LoaderConfig& self, const std::string& text) { self.*field = parse(text); });
}

void BindConfig(py::module_& m) {
  py::class_<LoaderConfig> c(m, "LoaderConfig");
  c.def(py::init<>())
      .def_readwrite("data", &LoaderConfig::data)
      .def_readwrite("weights", &LoaderConfig::weights)
      .def_readwrite("seq_len", &LoaderConfig::seq_len)
      .def_readwrite("batch_size", &LoaderConfig::batch_size)
      .def_readwrite("seed", &LoaderConfig::seed)
      .def_readwrite("logical_shards", &LoaderConfig::logical_shards)
      .def_readwrite("eos_id", &LoaderConfig::eos_id)
      .def_readwrite("bos_id", &LoaderConfig::bos_id)
      .def_readwrite("prefetch", &LoaderConfig::prefetch)
      .def_readwrite("read_ahead_bytes", &LoaderConfig::read_ahead_bytes)
      .def_readwrite("io_depth", &LoaderConfig::io_depth)
      .def_readwrite("offset_cache_bytes", &LoaderConfig::offset_cache_bytes)
      .def_readwrite("max_open_files", &LoaderConfig::max_open_files)
      .def_readwrite("max_memory_bytes", &LoaderConfig::max_memory_bytes)
      .def_readwrite("resume_from", &LoaderConfig::resume_from)
      .def_property(
          "weight_schedule",
          [](const LoaderConfig& self) { return ScheduleToPython(self.weight_schedule); },
          [](LoaderConfig& self, py::handle value) {
            self.weight_schedule = ScheduleFromPython(value);
          })
      .def("problems", &LoaderConfig::Problems);
  NamedField(c, "io_engine", &LoaderConfig::io_engine, IoEngineName, ParseIoEngine);
  NamedField(c, "direct_io", &LoaderConfig::direct_io, DirectIoName, ParseDirectIo);
  // Every boundary field or none; positions "restart" (each row) or "continue".
  c.def("set_boundaries", [](LoaderConfig& self, bool on, const std::string& positions) {
    if (positions != "restart" && positions != "continue") {
      throw ConfigError("positions must be 'restart' or 'continue'; got '" + positions + "'");
    }
    self.boundaries =
        on ? BoundaryFields::All(positions == "continue" ? PositionIds::kContinue
                                                         : PositionIds::kRestartEachRow)
           : BoundaryFields{};
  });
}

void BindLoader(py::module_& m) {
  py::class_<PyLoader>(m, "Loader")
      .def(py::init<int64_t, const LoaderConfig&, const std::string&>(),
           py::call_guard<py::gil_scoped_release>())
      .def("next", &PyLoader::Next)
      .def("save", [](PyLoader& self, const std::string& dir) { self.loader().Save(dir); })
      .def(
          "wait_for_save", [](PyLoader& self) { self.loader().WaitForSave(); },
          py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("step", [](PyLoader& self) { return self.loader().step(); })
      .def_property_readonly("rank", [](PyLoader& self) { return self.loader().rank(); })
      .def_property_readonly("world_size",
                             [](PyLoader& self) { return self.loader().world_size(); })
      .def_property_readonly("weights", [](PyLoader& self) { return WeightsByName(self.loader()); })
      .def_property_readonly(
          "schedule", [](PyLoader& self) { return ScheduleToPython(self.loader().schedule()); })
      // Converted with the GIL held; released while the reading pipeline is rebuilt (its
      // thread stopped, the batches read ahead dropped).
      .def("set_weights",
           [](PyLoader& self, py::handle weights) {
             const std::map<std::string, double> converted = WeightsOf(weights, "set_weights");
             py::gil_scoped_release release;
             self.loader().SetWeights(converted);
           })
      .def_property_readonly("eos_id", [](PyLoader& self) { return self.loader().eos_id(); })
      .def_property_readonly("bos_id", [](PyLoader& self) { return self.loader().bos_id(); })
      .def_property_readonly("vocab_size",
                             [](PyLoader& self) { return CorpusVocab(self.loader()); })
      .def_property_readonly("corpus_fingerprint",
                             [](PyLoader& self) { return self.loader().corpus().fingerprint; })
      .def_property_readonly("last_tokens_buffer", &PyLoader::last_tokens_buffer);

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
}

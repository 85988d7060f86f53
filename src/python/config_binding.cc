#include "config_binding.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "py_loader.h"
#include "stoker/error.h"
#include "stoker/io_engine.h"
#include "stoker/layout.h"
#include "stoker/loader.h"

namespace stoker::python {

bool TrueOrFalse(py::handle value, const std::string& name) {
  if (!py::isinstance<py::bool_>(value)) {
    throw ConfigError(name + "=" + Repr(value) + " is not True or False");
  }
  return value.cast<bool>();
}

std::string Text(py::handle value, const std::string& name) {
  if (!py::isinstance<py::str>(value)) {
    throw ConfigError(name + "=" + Repr(value) + " is not a string");
  }
  return value.cast<std::string>();
}

namespace {

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

// Weight schedules in Python are lists of dicts {"step": int, "ramp": bool, "weights": {name:
// weight}}: what Loader(weight_schedule=[...]) takes, Loader.schedule gives and JSON holds as it
// is. Entries from Python are checked here, so that a wrong type is a ConfigError naming the
// entry; the schedule's shape (steps increasing, weights >= 0) is LoaderConfig::Problems's, as
// for the C++ loader.
py::dict EntryToPython(const WeightScheduleEntry& entry) {
  py::dict out;
  out["step"] = entry.step;
  out["ramp"] = entry.ramp;
  out["weights"] = entry.weights;
  return out;
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
  WeightScheduleEntry out{.step = WholeNumber<uint64_t>(entry["step"], where + ": step")};
  if (entry.contains("ramp")) out.ramp = TrueOrFalse(entry["ramp"], where + ": ramp");
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

// A LoaderConfig field of an integer type, set from Python through WholeNumber.
template <typename Field>
void NumberField(py::class_<LoaderConfig>& c, const char* name, Field LoaderConfig::*field) {
  c.def_property(
      name, [=](const LoaderConfig& self) { return self.*field; },
      [=](LoaderConfig& self, py::handle value) {
        if constexpr (std::is_integral_v<Field>) {
          self.*field = WholeNumber<Field>(value, name);
        } else {  // std::optional<integer>
          self.*field = OptionalWholeNumber<typename Field::value_type>(value, name);
        }
      });
}

// A LoaderConfig field of an enum type, read and written by its name; a name it has not is a
// ConfigError naming the argument (io_engine='x': unknown I/O engine 'x': ...).
template <typename Enum, typename NameOf, typename Parse>
void NamedField(py::class_<LoaderConfig>& c, const char* name, Enum LoaderConfig::*field,
                NameOf name_of, Parse parse) {
  c.def_property(
      name, [=](const LoaderConfig& self) { return std::string(name_of(self.*field)); },
      [=](LoaderConfig& self, py::handle text) {
        const std::string value = Text(text, name);
        try {
          self.*field = parse(value);
        } catch (const ConfigError& error) {
          throw ConfigError(std::string(name) + "=" + Repr(text) + ": " + error.what());
        }
      });
}

// A LoaderConfig field of type std::string.
void TextField(py::class_<LoaderConfig>& c, const char* name, std::string LoaderConfig::*field) {
  c.def_property(
      name, [=](const LoaderConfig& self) { return self.*field; },
      [=](LoaderConfig& self, py::handle value) { self.*field = Text(value, name); });
}

// Every boundary field or none; positions "restart" (each row) or "continue".
void SetBoundaries(LoaderConfig& self, py::handle on, py::handle positions) {
  const bool wanted = TrueOrFalse(on, "boundaries");
  const std::string how = Text(positions, "positions");
  if (how != "restart" && how != "continue") {
    throw ConfigError("positions must be 'restart' or 'continue'; got '" + how + "'");
  }
  self.boundaries = wanted ? BoundaryFields::All(how == "continue" ? PositionIds::kContinue
                                                                   : PositionIds::kRestartEachRow)
                           : BoundaryFields{};
}

}  // namespace

std::string Repr(py::handle value) { return py::repr(value).cast<std::string>(); }

std::map<std::string, double> WeightsOf(py::handle value, const std::string& where) {
  if (!py::isinstance<py::dict>(value)) {
    throw ConfigError(where + "=" + Repr(value) + " is not a dict of dataset name -> weight");
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

py::list ScheduleToPython(const WeightSchedule& schedule) {
  py::list out;
  for (const WeightScheduleEntry& entry : schedule) out.append(EntryToPython(entry));
  return out;
}

void BindConfig(py::module_& m) {
  py::class_<LoaderConfig> c(m, "LoaderConfig");
  c.def(py::init<>());
  TextField(c, "data", &LoaderConfig::data);
  TextField(c, "resume_from", &LoaderConfig::resume_from);
  c.def_property(  // bytes: an encoded state (Loader::EncodedState), not text
      "resume_state", [](const LoaderConfig& self) { return py::bytes(self.resume_state); },
      [](LoaderConfig& self, const py::bytes& value) { self.resume_state = value; });
  c.def_property(
      "weights", [](const LoaderConfig& self) { return self.weights; },
      [](LoaderConfig& self, py::handle value) { self.weights = WeightsOf(value, "weights"); });
  c.def_property(
      "weight_schedule",
      [](const LoaderConfig& self) { return ScheduleToPython(self.weight_schedule); },
      [](LoaderConfig& self, py::handle value) {
        self.weight_schedule = ScheduleFromPython(value);
      });
  NumberField(c, "seq_len", &LoaderConfig::seq_len);
  NumberField(c, "batch_size", &LoaderConfig::batch_size);
  NumberField(c, "seed", &LoaderConfig::seed);
  NumberField(c, "logical_shards", &LoaderConfig::logical_shards);
  NumberField(c, "deal_max_docs", &LoaderConfig::deal_max_docs);
  NumberField(c, "eos_id", &LoaderConfig::eos_id);
  NumberField(c, "bos_id", &LoaderConfig::bos_id);
  NumberField(c, "prefetch", &LoaderConfig::prefetch);
  NumberField(c, "read_ahead_bytes", &LoaderConfig::read_ahead_bytes);
  NumberField(c, "io_depth", &LoaderConfig::io_depth);
  NumberField(c, "offset_cache_bytes", &LoaderConfig::offset_cache_bytes);
  NumberField(c, "max_open_files", &LoaderConfig::max_open_files);
  NumberField(c, "max_memory_bytes", &LoaderConfig::max_memory_bytes);
  NamedField(c, "io_engine", &LoaderConfig::io_engine, IoEngineName, ParseIoEngine);
  NamedField(c, "direct_io", &LoaderConfig::direct_io, DirectIoName, ParseDirectIo);
  TextField(c, "layout", &LoaderConfig::layout);
  NamedField(c, "replica_feed", &LoaderConfig::replica_feed, ReplicaFeedName, ParseReplicaFeed);
  c.def_property(
      "fields_by_stage", [](const LoaderConfig& self) { return self.fields_by_stage; },
      [](LoaderConfig& self, py::handle on) {
        self.fields_by_stage = TrueOrFalse(on, "fields_by_stage");
      });
  // A trainer's own groups (stoker/layout.h), as mpi4py's Fortran handles (Comm.py2f()).
  c.def("set_layout_comms", [](LoaderConfig& self, int64_t data_parallel, int64_t replica) {
    self.data_parallel_comm = CommOf(data_parallel);
    self.replica_comm = CommOf(replica);
  });
  c.def("set_boundaries", &SetBoundaries);
  c.def("problems", &LoaderConfig::Problems);
}

}  // namespace stoker::python

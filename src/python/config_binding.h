// The LoaderConfig of the module _stoker and the conversions of Python values into its fields:
// a value of the wrong type or out of its field's range (seq_len=-1, seq_len=True,
// boundaries="no", eos_id=2**63) is a ConfigError naming the argument and the value, never
// pybind11's TypeError nor a silent conversion. What the C++ loader checks of a value it can hold
// (a size of 0, a negative EOS id, BOS equal to EOS) is LoaderConfig::Problems's, not repeated
// here. All of it runs with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <limits>
#include <map>
#include <optional>
#include <string>

#include "stoker/error.h"
#include "stoker/weights.h"

namespace stoker::python {

namespace py = pybind11;

std::string Repr(py::handle value);

// An integer of type T (a Python int or a numpy integer) in T's range; True and False are ints to
// Python but no number here, a float is refused rather than rounded. ConfigError naming `name`.
template <typename T>
T WholeNumber(py::handle value, const std::string& name) {
  if (!py::isinstance<py::bool_>(value)) {
    if (PyObject* index = PyNumber_Index(value.ptr())) {
      try {
        return py::reinterpret_steal<py::int_>(index).cast<T>();
      } catch (const py::cast_error&) {  // out of T's range
      }
    } else {
      PyErr_Clear();
    }
  }
  using Limits = std::numeric_limits<T>;
  throw ConfigError(name + "=" + Repr(value) + " is not a whole number from " +
                    std::to_string(Limits::min()) + " to " + std::to_string(Limits::max()));
}

// None, or a whole number of type T.
template <typename T>
std::optional<T> OptionalWholeNumber(py::handle value, const std::string& name) {
  if (value.is_none()) return std::nullopt;
  return WholeNumber<T>(value, name);
}

// True or False; ConfigError naming `name` for anything else (1 included).
bool TrueOrFalse(py::handle value, const std::string& name);
// A str; ConfigError naming `name` otherwise.
std::string Text(py::handle value, const std::string& name);
// A dict of dataset name -> weight (the loader checks the names and that weights are >= 0);
// ConfigError starting with `where` for anything else.
std::map<std::string, double> WeightsOf(py::handle value, const std::string& where);
// A weight schedule as Python sees it: a list of {"step": int, "ramp": bool, "weights": {...}}.
py::list ScheduleToPython(const WeightSchedule& schedule);

void BindConfig(py::module_& m);

}  // namespace stoker::python

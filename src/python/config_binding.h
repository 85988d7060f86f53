// The LoaderConfig of the module _stoker and the conversions of Python values into its fields:
// a value of the wrong type or out of its field's range (seq_len=-1, seq_len=True,
// boundaries="no", eos_id=2**63) is a ConfigError naming the argument and the value, never
// pybind11's TypeError nor a silent conversion. What the C++ loader checks of a value it can hold
// (a size of 0, a negative EOS id, BOS equal to EOS) is LoaderConfig::Problems's, not repeated
// here. All of it runs with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <string>

#include "stoker/weights.h"

namespace stoker::python {

namespace py = pybind11;

std::string Repr(py::handle value);
// A dict of dataset name -> weight (the loader checks the names and that weights are >= 0);
// ConfigError starting with `where` for anything else.
std::map<std::string, double> WeightsOf(py::handle value, const std::string& where);
// A weight schedule as Python sees it: a list of {"step": int, "ramp": bool, "weights": {...}}.
py::list ScheduleToPython(const WeightSchedule& schedule);

void BindConfig(py::module_& m);

}  // namespace stoker::python

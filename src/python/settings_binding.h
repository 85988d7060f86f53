// The settings schema of the module _stoker (stoker/program/settings.h): parse_settings reads a
// Python trainer's command line and environment with the C++ programs' own code, so train.py
// takes stoker-train's flags, variables, defaults and help without writing any of them again.
// src/python/stoker/session.py is the side users see.
#pragma once

#include <pybind11/pybind11.h>

namespace stoker::python {

void BindProgramSettings(pybind11::module_& m);

}  // namespace stoker::python

// The run session of the module _stoker (stoker/run_session.h): RunSettings, the check of a
// trainer's settings, the stop handlers and RunSession, whose batches come through a PyLoader
// (py_loader.h) and whose saves call the trainer's Python function on rank 0.
// src/python/stoker/session.py is the side users see.
#pragma once

#include <pybind11/pybind11.h>

namespace stoker::python {

void BindSession(pybind11::module_& m);

}  // namespace stoker::python

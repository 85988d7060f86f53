#include "settings_binding.h"

#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "stoker/error.h"
#include "stoker/program/options.h"
#include "stoker/program/settings.h"

namespace stoker::python {
namespace {

namespace py = pybind11;
using program::ProgramSettings;
using program::TrainerSettings;

// What parse_settings hands Python: the settings and the --check lines of the variables.
struct ParsedSettings {
  ProgramSettings settings;
  std::vector<std::string> variable_lines;
};

// Raises SystemExit(code) in Python, as argparse does after --help or an error.
[[noreturn]] void Exit(int code) {
  PyErr_SetObject(PyExc_SystemExit, py::int_(code).ptr());
  throw py::error_already_set();
}

ParsedSettings Parse(const std::vector<std::string>& args, const std::string& program_name,
                     const std::string& name, const std::string& description, bool print) {
  const auto program = program::ParseProgram(program_name);
  if (!program) throw ConfigError("program must be 'run' or 'trainer', not '" + program_name + "'");
  CLI::App app(description, name);
  ParsedSettings parsed{program::DefaultSettings(*program), {}};
  program::CommandLine line(&app, *program, &parsed.settings);
  program::CheckOptionValues(&app);
  if (const auto code = program::ParseCommandLine(&app, &line, args, print)) {
    std::fflush(stdout);
    std::fflush(stderr);
    Exit(*code);
  }
  parsed.variable_lines = line.VariableLines();
  return parsed;
}

}  // namespace

void BindProgramSettings(py::module_& m) {
  py::class_<TrainerSettings>(m, "TrainerSettings")
      .def_readonly("vocab", &TrainerSettings::vocab)
      .def_readonly("dim", &TrainerSettings::dim)
      .def_readonly("layers", &TrainerSettings::layers)
      .def_readonly("heads", &TrainerSettings::heads)
      .def_readonly("lr", &TrainerSettings::lr)
      .def_readonly("warmup", &TrainerSettings::warmup)
      .def_readonly("clip", &TrainerSettings::clip)
      .def_readonly("doc_mask", &TrainerSettings::doc_mask)
      .def_readonly("log_every", &TrainerSettings::log_every)
      .def("problems", &TrainerSettings::Problems);
  py::class_<ParsedSettings>(m, "ProgramSettings")
      .def_property_readonly(
          "run", [](ParsedSettings& s) -> RunSettings& { return s.settings.run; },
          py::return_value_policy::reference_internal)
      .def_property_readonly(
          "trainer", [](ParsedSettings& s) -> TrainerSettings& { return s.settings.trainer; },
          py::return_value_policy::reference_internal)
      .def_property_readonly("check", [](const ParsedSettings& s) { return s.settings.check; })
      .def_readonly("variable_lines", &ParsedSettings::variable_lines);
  m.def("parse_settings", &Parse, py::arg("args"), py::arg("program"), py::arg("name"),
        py::arg("description"), py::arg("print"));
}

}  // namespace stoker::python

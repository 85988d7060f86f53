#include "session_binding.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <csignal>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "config_binding.h"
#include "py_loader.h"
#include "stoker/error.h"
#include "stoker/run_session.h"

namespace stoker::python {
namespace {

// A RunSettings field as a property whose setter converts as LoaderConfig's do
// (config_binding.h): a value of another type is a ConfigError naming the field.
template <typename Field>
void SettingField(py::class_<RunSettings>& c, const char* name, Field RunSettings::*field) {
  c.def_property(
      name, [=](const RunSettings& self) { return self.*field; },
      [=](RunSettings& self, py::handle value) {
        if constexpr (std::is_same_v<Field, bool>) {
          self.*field = TrueOrFalse(value, name);
        } else if constexpr (std::is_integral_v<Field>) {
          self.*field = WholeNumber<Field>(value, name);
        } else {
          self.*field = Text(value, name);
        }
      });
}

void BindSettings(py::module_& m) {
  py::class_<RunSettings> c(m, "RunSettings");
  c.def(py::init<>());
  c.def_readwrite("loader", &RunSettings::loader);
  SettingField(c, "weights", &RunSettings::weights);
  SettingField(c, "weights_schedule", &RunSettings::weights_schedule);
  SettingField(c, "steps", &RunSettings::steps);
  SettingField(c, "checkpoint_dir", &RunSettings::checkpoint_dir);
  SettingField(c, "save_every", &RunSettings::save_every);
  SettingField(c, "save_last", &RunSettings::save_last);
  SettingField(c, "resume", &RunSettings::resume);
  SettingField(c, "start_over", &RunSettings::start_over);
  SettingField(c, "trace_dir", &RunSettings::trace_dir);
  SettingField(c, "result_file", &RunSettings::result_file);
  SettingField(c, "ready_file", &RunSettings::ready_file);
  c.def("problems", &RunSettings::Problems);
}

// Rank 0's part of a save, by the trainer's Python function `write(step_dir)` (None: nothing).
// Its exception becomes a stoker error with its message: a Python exception must not cross the
// collective that called it, which holds no GIL.
// Runs `call` (Python code) with the GIL; its exception becomes a stoker error of its message.
template <typename Call>
auto CallPython(Call&& call) {
  py::gil_scoped_acquire gil;
  try {
    return call();
  } catch (py::error_already_set& e) {
    const std::string what =
        fmt::format("{}: {}", py::str(e.type().attr("__name__")).cast<std::string>(),
                    py::str(e.value()).cast<std::string>());
    if (e.matches(PyExc_OSError)) throw IoError(what);
    throw Error(what);
  }
}

WriteTrainerFiles PythonWriter(py::object write) {
  if (write.is_none()) return {};
  return [write = std::move(write)](const std::string& step_dir) {
    CallPython([&] { write(step_dir); });
  };
}

// The session and the PyLoader it hands batches from (kept alive by the reference here). Every
// call that touches the loader holds its lock (PyLoader::Locked), the GIL released.
class PySession {
 public:
  // Collective, made Leavable (Ctrl-C leaves it: it reads and renames step folders).
  PySession(int64_t comm, RunSettings settings, std::vector<std::string> names, std::string tag)
      : session_(Leavable([=]() mutable {
          return std::make_unique<RunSession>(CommOf(comm), std::move(settings),
                                              TrainerFiles{std::move(names), std::move(tag)});
        })) {
    session_->WaitForWritesInSlices(kSlice, &RunSignalHandlers);  // Ctrl-C leaves a slow write
  }

  void Start(py::object loader) {
    loader_object_ = loader;
    loader_ = &loader.cast<PyLoader&>();
    loader_->Locked([&] { session_->Start(loader_->loader()); });
  }
  py::dict Next() {
    return Loader().Next([&](std::chrono::milliseconds timeout, std::optional<Batch>* batch) {
      return session_->TryNext(timeout, batch);
    });
  }
  void EndStep(bool stop, py::object write) {
    const WriteTrainerFiles writer = PythonWriter(std::move(write));
    Leaving("end_step", [&] { Loader().Locked([&] { session_->EndStep(stop, writer); }); });
  }
  std::string Finish(const std::string& fields, py::object write) {
    const WriteTrainerFiles writer = PythonWriter(std::move(write));
    return Leaving("finish", [&] {
      return Loader().Locked([&] { return session_->Finish(fields, writer); });
    });
  }
  RunSession& session() { return *session_; }

 private:
  PyLoader& Loader() {
    if (!loader_) throw ConfigError("the run session has not started: call start(loader) first");
    if (!left_in_.empty()) {
      throw ConfigError("the run session was left by Ctrl-C in " + left_in_ +
                        "(): its ranks may be in different saves; end the process");
    }
    return *loader_;
  }
  // `call()`, a collective call of the session; a KeyboardInterrupt it raises leaves the session
  // unusable on this rank (its ranks may stand in different collectives).
  template <typename Call>
  auto Leaving(const char* name, Call&& call) -> decltype(call()) {
    try {
      return call();
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_KeyboardInterrupt)) left_in_ = name;
      throw;
    }
  }

  std::unique_ptr<RunSession> session_;
  std::string left_in_;  // the call Ctrl-C left, after which the session refuses
  py::object loader_object_;
  PyLoader* loader_ = nullptr;
};

void BindRunSession(py::module_& m) {
  using Self = PySession;
  py::class_<PySession>(m, "RunSession")
      .def(py::init<int64_t, RunSettings, std::vector<std::string>, std::string>())
      .def("start", &Self::Start)
      .def("next", &Self::Next)
      .def("end_step", &Self::EndStep)
      .def("finish", &Self::Finish)
      .def_property_readonly("running", [](Self& s) { return s.session().Running(); })
      .def("stop_requested", [](Self& s) { return s.session().StopRequested(); })
      .def(
          "stop_together", [](Self& s) { return s.session().StopTogether(); },
          py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("loader_config", [](Self& s) { return s.session().loader_config(); })
      .def_property_readonly("resumed_from", [](Self& s) { return s.session().resumed_from(); })
      .def_property_readonly("saved_world", [](Self& s) { return s.session().saved_world(); })
      .def_property_readonly("start_step", [](Self& s) { return s.session().start_step(); })
      .def_property_readonly("seconds", [](Self& s) { return s.session().seconds(); })
      .def_property_readonly("waiting", [](Self& s) { return s.session().waiting(); })
      .def_property_readonly("stopped_early", [](Self& s) { return s.session().stopped_early(); });
}

}  // namespace

void BindSession(py::module_& m) {
  BindSettings(m);
  BindRunSession(m);
  // A signal that reached the trainer's own Python handler before these were installed (while
  // the package was imported) is raised again, for the session's handler to note.
  m.def("install_stop_handlers", [](int pending) {
    InstallStopHandlers();
    if (pending != 0) std::raise(pending);
  });
  m.def("check_run_settings",
        [](int64_t comm, const RunSettings& settings, py::object more, const std::string& program) {
          const auto problems = [&] {
            return CallPython([&] {
              return more.is_none() ? std::vector<std::string>()
                                    : more().cast<std::vector<std::string>>();
            });
          };
          py::gil_scoped_release release;
          return CheckRunSettings(CommOf(comm), settings, problems, program);
        });
}

}  // namespace stoker::python

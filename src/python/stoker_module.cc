// _stoker: the C++ side of the Python package `stoker` (src/python/stoker/ is the side users see,
// and documents every call). It binds LoaderConfig (config_binding.h), the Loader (PyLoader,
// py_loader.h) and the run session (session_binding.h), turns stoker's errors into the package's
// exceptions (stoker.Error and its kinds), and hands each batch over as a dict of numpy arrays
// that own the loader's buffers, or of what the package's converter makes of them (torch
// tensors that share them): no copy, and no libtorch in the module; `labels` are a copy.
//
// Python threads may share a loader: its calls are serialized (one at a time, each waiting for
// the one before). Every call that waits releases the GIL and waits in slices between which the
// signal handlers run (waiting.h): Ctrl-C reaches the trainer while storage is slow. next()
// interrupted so takes no batch (the next call hands it over); save(), wait_for_save() and
// close() leave the write to go on in the background; construction, a resume and the resume
// helpers, collective calls that read storage, are Leavable: they go on to their end on the
// package's worker thread, their result dropped; set_weights() too, its weights set all the
// same (PyLoader::OnWorker); the run session's end_step() and finish() leave a save's write.
//
// Built on the public headers only, as a user of the library would build it. The communicator
// comes from mpi4py as its Fortran handle (Comm.py2f()): mpi4py and stoker share Debian's Open MPI.
#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config_binding.h"
#include "py_loader.h"
#include "session_binding.h"
#include "settings_binding.h"
#include "stoker/checkpoint.h"
#include "stoker/error.h"
#include "stoker/layout.h"
#include "stoker/loader.h"
#include "stoker/program/log.h"
#include "stoker/weights.h"
#include "waiting.h"

namespace stoker::python {
namespace {

// The largest vocab_size attribute of the corpus's shards; none when no shard has one.
std::optional<int64_t> CorpusVocab(const Loader& loader) {
  std::optional<int64_t> vocab;
  for (const ShardInfo& shard : loader.corpus().shards) {
    const auto& size = shard.vocabulary->vocab_size;
    if (size) vocab = std::max(vocab.value_or(0), *size);
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

// Loader.shares(): MixingShares as a dict, the per-dataset figures by name.
py::dict SharesToPython(const MixingShares& shares) {
  py::dict tokens, promised, weights;
  for (size_t d = 0; d < shares.datasets.size(); ++d) {
    const py::str name(shares.datasets[d]);
    tokens[name] = shares.tokens[d];
    promised[name] = shares.promised[d];
    weights[name] = shares.weights[d];
  }
  py::dict out;
  out["from_step"] = shares.from_step;
  out["to_step"] = shares.to_step;
  out["tokens"] = tokens;
  out["promised"] = promised;
  out["weights"] = weights;
  out["largest_gap"] = shares.LargestGap();
  out["text"] = shares.Text();
  return out;
}

// Each kind is a stoker.Error and the standard exception a Python caller expects of it:
// ConfigError and DataError a ValueError (a setting, or the corpus's content, is wrong), IoError
// and Hdf5Error an OSError, MpiError and InternalError a RuntimeError; BusyError a ConfigError.
void BindErrors(py::module_& m) {
  // Translators are tried newest first: the kinds after their base.
  static py::exception<Error> error(m, "Error");
  const auto also = [&](PyObject* standard) { return py::make_tuple(error, py::handle(standard)); };
  const auto& config =
      py::register_exception<ConfigError>(m, "ConfigError", also(PyExc_ValueError));
  py::register_exception<BusyError>(m, "BusyError", config.ptr());
  py::register_exception<DataError>(m, "DataError", also(PyExc_ValueError));
  py::register_exception<IoError>(m, "IoError", also(PyExc_OSError));
  py::register_exception<MpiError>(m, "MpiError", also(PyExc_RuntimeError));
  py::register_exception<Hdf5Error>(m, "Hdf5Error", also(PyExc_OSError));
  py::register_exception<InternalError>(m, "InternalError", also(PyExc_RuntimeError));
}

// Every call goes through Locked (close() and a resume replace the Loader), but set_convert and
// last_tokens_buffer (the caller's own).
void BindLoader(py::module_& m) {
  using Self = PyLoader;
  py::class_<PyLoader>(m, "Loader")
      .def(py::init<int64_t, const LoaderConfig&, std::string>())
      .def("set_convert", &Self::SetConvert)
      .def("close", &Self::Close)
      .def_property_readonly("closed", [](Self& s) { return s.Locked([&] { return s.closed(); }); })
      .def("next", [](Self& s) { return s.Next(); })
      .def("__next__", [](Self& s) { return s.Next(); })
      .def("__iter__", [](py::object self) { return self; })
      .def("resume", &Self::Resume)
      .def_property_readonly("saved",
                             [](Self& s) -> py::object {
                               const auto saved = s.Locked([&] { return s.saved(); });
                               if (!saved) return py::none();
                               return py::make_tuple(saved->first, saved->second);
                             })
      .def_property_readonly("save_failed",
                             [](Self& s) { return s.Locked([&] { return s.save_failed(); }); })
      .def("encoded_state",
           [](Self& s) {
             const std::string bytes = s.Locked([&] { return s.loader().EncodedState(); });
             return py::bytes(bytes);
           })
      .def("save", &Self::Save)
      .def("wait_for_save", &Self::WaitForSave)
      .def_property_readonly("step",
                             [](Self& s) { return s.Locked([&] { return s.loader().step(); }); })
      .def_property_readonly("rank",
                             [](Self& s) { return s.Locked([&] { return s.loader().rank(); }); })
      .def_property_readonly(
          "world_size", [](Self& s) { return s.Locked([&] { return s.loader().world_size(); }); })
      .def_property_readonly(
          "weights", [](Self& s) { return s.Locked([&] { return WeightsByName(s.loader()); }); })
      .def_property_readonly("schedule",
                             [](Self& s) {
                               const WeightSchedule schedule =
                                   s.Locked([&] { return s.loader().schedule(); });
                               return ScheduleToPython(schedule);
                             })
      .def("shares",
           [](Self& s, bool since_step_zero) {
             return SharesToPython(s.Locked([&] { return s.loader().Shares(since_step_zero); }));
           })
      // Converted with the GIL held; the reading pipeline is rebuilt (its thread stopped, the
      // batches read ahead dropped) on the worker, under the lock.
      .def("set_weights",
           [](Self& s, py::handle weights) { s.SetWeights(WeightsOf(weights, "weights")); })
      .def_property_readonly("eos_id",
                             [](Self& s) { return s.Locked([&] { return s.loader().eos_id(); }); })
      .def_property_readonly("bos_id",
                             [](Self& s) { return s.Locked([&] { return s.loader().bos_id(); }); })
      .def_property_readonly(
          "vocab_size", [](Self& s) { return s.Locked([&] { return CorpusVocab(s.loader()); }); })
      .def_property_readonly(
          "corpus_fingerprint",
          [](Self& s) { return s.Locked([&] { return s.loader().corpus().fingerprint; }); })
      .def_property_readonly("last_tokens_buffer", &Self::last_tokens_buffer);
}

#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION == 4
// Open MPI 4's record of where MPI stands in this process (ompi/runtime/mpiruntime.h; exported by
// libmpi), whose last value, 5, is what MPI_Finalize leaves: MPI_Finalized() says true from it.
extern "C" volatile int32_t ompi_mpi_state;
constexpr int32_t kOmpiFinalizeCompleted = 5;
#endif

// In a forked child of a rank: MPI counts as finalized, so that the child's exit (mpi4py's
// MPI_Finalize at exit, which waits for ever there for the parent's MPI runtime threads the fork
// did not copy) does not hang. The child must make no MPI call (a loader refuses to work there);
// the parent's MPI is untouched. True where it was done (Open MPI 4, MPI initialized).
bool LeaveMpiToTheParent() {
  int initialized = 0;
  MPI_Initialized(&initialized);
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION == 4
  if (initialized) ompi_mpi_state = kOmpiFinalizeCompleted;
  return initialized != 0;
#else
  return false;
#endif
}

void BindFunctions(py::module_& m) {
  m.def("leave_mpi_to_the_parent", &LeaveMpiToTheParent);
  m.def("init_logging", [](int rank) { program::InitLogging(rank); });
  m.def("wait_for_background_work", &WaitForBackgroundWork);
  m.def("parse_weights", [](const std::string& text) { return ParseWeights(text); });
  m.def("parse_weight_schedule",
        [](const std::string& text) { return ScheduleToPython(ParseWeightSchedule(text)); });
  m.def("weight_schedule_argument",
        [](const std::string& value) { return ScheduleToPython(WeightScheduleArgument(value)); });
  // The groups of a layout (stoker/layout.h) as Fortran handles, for mpi4py's Comm.f2py.
  m.def("layout_comms", [](int64_t comm, const std::string& layout) {
    const LayoutComms made =
        Leavable([=] { return MakeLayoutComms(CommOf(comm), ParseLayout(layout)); });
    return std::vector<int64_t>{MPI_Comm_c2f(made.data_parallel), MPI_Comm_c2f(made.replica),
                                MPI_Comm_c2f(made.gradient)};
  });
  m.def("find_resume_step",
        [](int64_t comm, const std::string& dir, const std::vector<std::string>& required) {
          return Leavable([=] { return FindResumeStep(CommOf(comm), dir, required); });
        });
  m.def("prepare_resume",
        [](int64_t comm, const std::string& dir, const std::vector<std::string>& required) {
          return Leavable([=] { return PrepareResume(CommOf(comm), dir, required); });
        });
  m.def("prepare_fresh_start", [](int64_t comm, const std::string& dir, bool start_over) {
    Leavable([=] { PrepareFreshStart(CommOf(comm), dir, start_over); });
  });
}

}  // namespace
}  // namespace stoker::python

PYBIND11_MODULE(_stoker, m) {
  m.doc() = "The C++ side of the stoker package; use `import stoker` (help(stoker.Loader)).";
  stoker::python::StartWaiting();
  stoker::python::BindErrors(m);
  stoker::python::BindConfig(m);
  stoker::python::BindLoader(m);
  stoker::python::BindFunctions(m);
  stoker::python::BindSession(m);
  stoker::python::BindProgramSettings(m);
}

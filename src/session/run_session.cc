#include "stoker/run_session.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "checkpoint/checkpoint_store.h"
#include "mpi/agreement.h"
#include "mpi/comm.h"
#include "os/files.h"
#include "stoker/checkpoint.h"
#include "stoker/trace.h"

namespace stoker {

namespace {

// The signal that asked the run to stop (0: none). Set by the handler on any thread.
volatile std::sig_atomic_t g_stop_signal = 0;
bool g_stop_handlers = false;

extern "C" void OnStopSignal(int signal) { g_stop_signal = signal; }

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Names from the file system need not be UTF-8 (a resume folder in Latin-1, say): such bytes
// become U+FFFD so that the line is always valid JSON.
std::string JsonText(const nlohmann::json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

// The run's settings that every rank must share (the loader's are compared when it is built), and
// the program's (RunSettings::program_shared): a rank with other --steps would wait for ever in
// the last save's collective, one with another --checkpoint-dir would leave no complete step
// anywhere. Folders are compared as the folders they resolve to, so that a symbolic link or a
// relative path names the same one. The settings schema marks these kSession
// (stoker/program/settings.h).
std::vector<mpi::Setting> RunSharedSettings(const RunSettings& s) {
  auto folder = [](const std::string& dir) {
    std::error_code error;  // a folder that cannot be resolved is compared as given
    const std::filesystem::path resolved = std::filesystem::weakly_canonical(dir, error);
    return dir.empty() ? std::string("none") : error ? dir : resolved.string();
  };
  auto yes_no = [](bool b) { return std::string(b ? "yes" : "no"); };
  std::vector<mpi::Setting> shared = {{"steps", std::to_string(s.steps)},
                                      {"checkpoint_dir", folder(s.checkpoint_dir)},
                                      {"save_every", std::to_string(s.save_every)},
                                      {"save_last", yes_no(s.save_last)},
                                      {"resume", yes_no(s.resume)},
                                      {"start_over", yes_no(s.start_over)},
                                      {"trace_dir", folder(s.trace_dir)}};
  for (const auto& [flag, value] : s.program_shared) shared.push_back({flag, value});
  return shared;
}

}  // namespace

void InstallStopHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  action.sa_flags = SA_RESTART;  // the calls a signal interrupts (reads, MPI, gloo) go on
  sigemptyset(&action.sa_mask);
  sigaction(SIGUSR1, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  g_stop_handlers = true;
}

class RunSession::Impl {
 public:
  Impl(MPI_Comm world, RunSettings settings, TrainerFiles files);
  void Prepare();
  // A batch the loader handed over: traced before the trainer sees it.
  void Delivered(const std::optional<Batch>& batch);
  void Save(const WriteTrainerFiles& write);
  // The loader's last write, waited for (in slices when the caller asked for them).
  void WaitForWrite();
  nlohmann::json Figures() const;

  mpi::Comm comm;
  RunSettings settings;
  TrainerFiles files;
  LoaderConfig config;
  std::string resumed_from;
  uint64_t saved_world = 0;
  Loader* loader = nullptr;  // from Start on
  std::optional<PieceTraceWriter> trace;
  std::chrono::steady_clock::time_point created = std::chrono::steady_clock::now(), started;
  std::optional<double> seconds;  // of the loop, once it ended (Running() said false)
  double startup = 0, waiting = 0;
  double save_wait = 0;  // the longest this rank waited at a save for the others
  uint64_t start_step = 0, saved_step = 0;
  bool stopped = false;
  std::chrono::milliseconds slice{0};  // none: one wait
  std::function<void()> between_slices;
};

RunSession::Impl::Impl(MPI_Comm world, RunSettings s, TrainerFiles f)
    : comm(world), settings(std::move(s)), files(std::move(f)), config(settings.loader) {
  mpi::RequireAgreement(comm, RunSharedSettings(settings), "run settings differ between ranks");
  config.SetMixing(settings.weights, settings.weights_schedule);  // checked by Problems
  config.layout = settings.Layout();
  if (!settings.origins.empty() && comm.rank() == 0) {
    std::vector<std::string> origins;
    for (const auto& [flag, origin] : settings.origins) {
      origins.push_back(fmt::format("{} {}", flag, origin));
    }
    spdlog::info("{}: settings not from the command line: {}", files.tag, fmt::join(origins, "; "));
  }
  mpi::FailTogether(comm, [&] {
    STOKER_CHECK(settings.ready_file.empty() || g_stop_handlers, ConfigError,
                 "a ready file ({}) promises that a stop signal is taken: call "
                 "InstallStopHandlers() first",
                 settings.ready_file);
    // Every rank has installed its stop handlers before it came here.
    if (comm.rank() == 0 && !settings.ready_file.empty()) {
      WriteFileAtomically(settings.ready_file, fmt::format("{}\n", getpid()));
    }
  });
  if (settings.resume) Prepare();
}

// The step to go on from: a run that saves sets aside the newer, interrupted step folders, so
// that its saves never mix with files a killed run left in them.
void RunSession::Impl::Prepare() {
  const std::string& dir = settings.checkpoint_dir;
  const auto step_dir = settings.Saves() ? PrepareResume(comm.get(), dir, files.names)
                                         : FindResumeStep(comm.get(), dir, files.names);
  if (!step_dir) {
    spdlog::info("{}: no checkpoint in {} yet: starting at step 0", files.tag, dir);
    return;
  }
  config.resume_from = resumed_from = *step_dir;
  // The loader's files tell the world size (a resharded step folder keeps the trainer's files
  // of the run that saved the model).
  saved_world = StepFolderWorld(resumed_from).value_or(0);
  spdlog::info("{}: resumed from {} (saved on {} ranks, now {})", files.tag, resumed_from,
               saved_world, comm.size());
}

void RunSession::Impl::Delivered(const std::optional<Batch>& batch) {
  STOKER_CHECK(batch, InternalError, "the loader's stream ended");
  if (trace) trace->Write(*batch);
}

void RunSession::Impl::Save(const WriteTrainerFiles& write) {
  const uint64_t step = loader->step();
  if (!settings.Saves() || step == saved_step) return;
  const std::string step_dir = settings.checkpoint_dir + "/" + StepFolderName(step);
  // Rank 0 writes the trainer's files and their record before any rank's loader file can
  // complete the step. Collective: the ranks stay within one save interval of each other (a
  // rank far behind the others would lose them all their saves since, were the job to crash).
  const auto arrived = std::chrono::steady_clock::now();
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    std::filesystem::create_directories(step_dir);
    if (write) write(step_dir);
    std::string record;
    for (const std::string& name : files.names) {
      STOKER_CHECK(std::filesystem::is_regular_file(step_dir + "/" + name), InternalError,
                   "the trainer did not write {}/{}", step_dir, name);
      record += name + "\n";
    }
    if (!files.names.empty()) WriteFileAtomically(TrainerFilesPath(step_dir), record);
  });
  save_wait = std::max(save_wait, Since(arrived));
  WaitForWrite();
  loader->Save(step_dir);
  saved_step = step;
}

void RunSession::Impl::WaitForWrite() {
  if (!between_slices) return loader->WaitForSave();
  while (!loader->TryWaitForSave(slice)) between_slices();
}

nlohmann::json RunSession::Impl::Figures() const {
  const double loop = seconds ? *seconds : Since(started);
  double times[2] = {loop, waiting};
  MPI_Allreduce(MPI_IN_PLACE, times, 2, MPI_DOUBLE, MPI_SUM, comm.get());
  double max_wait[2] = {waiting, save_wait};
  MPI_Allreduce(MPI_IN_PLACE, max_wait, 2, MPI_DOUBLE, MPI_MAX, comm.get());
  const bool resumed = !resumed_from.empty();
  return {{"ranks", comm.size()},
          {"start_step", start_step},
          {"end_step", loader->step()},
          {"stopped_early", stopped},
          {"resumed_from", resumed ? nlohmann::json(resumed_from) : nlohmann::json()},
          {"saved_world", resumed ? nlohmann::json(saved_world) : nlohmann::json()},
          {"seconds", loop},
          {"data_wait_share", times[0] > 0 ? times[1] / times[0] : 0.0},
          {"max_wait_seconds", max_wait[0]},
          {"max_save_wait_seconds", max_wait[1]},
          {"startup_seconds", startup}};
}

RunSession::RunSession(MPI_Comm world, RunSettings settings, TrainerFiles files)
    : impl_(std::make_unique<Impl>(world, std::move(settings), std::move(files))) {}

RunSession::~RunSession() = default;

const RunSettings& RunSession::settings() const { return impl_->settings; }
const LoaderConfig& RunSession::loader_config() const { return impl_->config; }
const std::string& RunSession::resumed_from() const { return impl_->resumed_from; }
uint64_t RunSession::saved_world() const { return impl_->saved_world; }

void RunSession::Start(Loader& loader) {
  Impl& s = *impl_;
  STOKER_CHECK(!s.loader, InternalError, "RunSession::Start called twice");
  s.loader = &loader;
  // The loader and the trainer's state are built (corpus, configuration and model checked): an
  // earlier run's steps are refused, or deleted with --start-over, before the first save.
  if (!s.settings.resume && s.settings.Saves()) {
    PrepareFreshStart(s.comm.get(), s.settings.checkpoint_dir, s.settings.start_over);
  }
  s.start_step = s.saved_step = loader.step();
  if (!s.settings.trace_dir.empty()) {
    OpenPieceTrace(s.comm.get(), loader, s.settings.trace_dir, s.start_step, &s.trace);
  }
  s.startup = Since(s.created);
  s.started = std::chrono::steady_clock::now();
}

Batch RunSession::Next() {
  Impl& s = *impl_;
  const auto asked = std::chrono::steady_clock::now();
  std::optional<Batch> batch = s.loader->Next();
  s.waiting += Since(asked);
  s.Delivered(batch);
  return std::move(*batch);
}

bool RunSession::TryNext(std::chrono::milliseconds timeout, std::optional<Batch>* batch) {
  Impl& s = *impl_;
  const auto asked = std::chrono::steady_clock::now();
  const bool taken = s.loader->TryNext(timeout, batch);
  s.waiting += Since(asked);
  if (taken) s.Delivered(*batch);
  return taken;
}

bool RunSession::Running() const {
  Impl& s = *impl_;
  const bool running = !s.stopped && s.loader->step() < s.settings.steps;
  if (!running && !s.seconds) s.seconds = Since(s.started);
  return running;
}

bool RunSession::StopRequested() const { return g_stop_signal != 0; }

bool RunSession::StopTogether() {
  int stop = StopRequested() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &stop, 1, MPI_INT, MPI_MAX, impl_->comm.get());
  return stop != 0;
}

void RunSession::EndStep(bool stop, const WriteTrainerFiles& write) {
  Impl& s = *impl_;
  const uint64_t step = s.loader->step();
  if (!stop) {
    if (s.settings.save_every > 0 && step % s.settings.save_every == 0) s.Save(write);
    return;
  }
  s.stopped = true;
  s.Save(write);
  s.WaitForWrite();  // "saved" is said once the step folder is complete
  spdlog::info("{}: stopping at step {} on signal{}", s.files.tag, step,
               s.settings.Saves()
                   ? fmt::format("; saved {}/{}", s.settings.checkpoint_dir, StepFolderName(step))
                   : std::string(" (no --checkpoint-dir: nothing saved)"));
}

void RunSession::WaitForWritesInSlices(std::chrono::milliseconds slice,
                                       std::function<void()> between) {
  impl_->slice = slice;
  impl_->between_slices = std::move(between);
}

std::string RunSession::Finish(std::string_view fields, const WriteTrainerFiles& write) {
  Impl& s = *impl_;
  // The end of the run is a checkpoint too, so that a later run can go on from it.
  if (s.settings.save_last) s.Save(write);
  s.WaitForWrite();
  nlohmann::json line = s.Figures();
  mpi::FailTogether(s.comm, [&] {
    const nlohmann::json more = nlohmann::json::parse(fields.empty() ? "{}" : fields);
    STOKER_CHECK(more.is_object(), InternalError, "Finish: the trainer's fields are no object");
    line.update(more);
  });
  const std::string text = JsonText(line);
  mpi::FailTogether(s.comm, [&] {
    if (s.comm.rank() != 0) return;
    if (!s.settings.result_file.empty()) AppendFile(s.settings.result_file, text + "\n");
    std::puts(text.c_str());
    std::fflush(stdout);
  });
  return text;
}

double RunSession::seconds() const {
  return impl_->seconds ? *impl_->seconds : Since(impl_->started);
}
double RunSession::waiting() const { return impl_->waiting; }
bool RunSession::stopped_early() const { return impl_->stopped; }
uint64_t RunSession::start_step() const { return impl_->start_step; }

}  // namespace stoker

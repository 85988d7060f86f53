// stoker::RunSession: what a training job is, in one place, for every program that trains on a
// Loader (`stoker run`, `stoker-train`, train.py through the Python package, a trainer of one's
// own). The session owns the job contract; the trainer owns its model and its loop:
//
//   1. CheckRunSettings: every problem of the settings (RunSettings::Problems and the trainer's
//      own), found by rank 0 and refused on every rank together (a program exits 2).
//   2. The constructor: the ready file (once every rank has its stop handlers, installed by
//      InstallStopHandlers), then, for --resume, the newest complete step of the checkpoint folder
//      with the folder's lock and the newer, interrupted steps set aside. loader_config() is then
//      the Loader's configuration, resume_from included; resumed_from() is the step folder whose
//      trainer files the trainer loads.
//   3. Start(loader), once the Loader and the trainer's state are built: step folders of an
//      earlier run refused (or deleted with --start-over) before the first save; the piece trace.
//   4. The loop: Next() hands the batch (timed for the data-wait share, traced); StopRequested()
//      says this rank caught a stop signal, a flag a trainer folds into its own all-reduce (or
//      StopTogether() makes that all-reduce); EndStep(stop, write) saves when a save is due.
//   5. Finish(fields, write): the last step saved, then the result: rank 0 prints one JSON line
//      on stdout (the session's figures and the trainer's `fields`) and writes it into
//      --result, atomically.
//
// A save: rank 0 calls `write(step_dir)`, which writes the trainer's files (TrainerFiles::names)
// into the step folder; the session checks they are there and records their names in
// step_dir/trainer.files; then every rank saves its loader file. A step folder is complete when
// every rank file and every recorded file is there: `stoker steps` and the job scripts know that
// without being told the trainer's file names.
//
// Collective over the communicator given (the session duplicates it): the constructor, Start,
// StopTogether, EndStep and Finish are called by every rank in the same order. Errors are thrown
// on every rank together where the ranks can agree on them. One thread uses a session.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stoker/batch.h"
#include "stoker/loader.h"

namespace stoker {

// The settings of a training job beyond the Loader's (docs/operations.md).
struct RunSettings {
  LoaderConfig loader;           // --data, --seq-len, ... (resume_from: the session's to set)
  std::string weights;           // --weights as typed (LoaderConfig::SetMixing at the check)
  std::string weights_schedule;  // --weights-schedule as typed
  // --tensor-parallel, --context-parallel, --pipeline-parallel: the sizes of a parallel layout
  // in Megatron's rank order (tp, cp, dp, pp; dp the rest of the job), instead of loader.layout.
  int tensor_parallel = 1, context_parallel = 1, pipeline_parallel = 1;
  uint64_t steps = 300;        // stop after this global step
  std::string checkpoint_dir;  // step-<N>/ folders go here (empty: no checkpoints)
  // A step folder every `save_every` global steps (0: none on a schedule). A run with save_last
  // also saves its last step; a run that saves at all (Saves) saves the step a stop signal
  // ends it at.
  uint64_t save_every = 50;
  bool save_last = true;    // the trainers: a later run goes on from the end of this one
  bool resume = false;      // go on from the newest complete step, if any
  bool start_over = false;  // start at step 0, deleting the step folders already there
  std::string trace_dir;    // piece traces for `stoker audit` (empty: none)
  std::string result_file;  // rank 0 also writes the result line here (empty: stdout only)
  std::string ready_file;   // rank 0 creates it once every rank can take a stop signal
  // Where a setting came from when neither the command line nor the default gave it, by flag:
  // "STEPS='0' in the environment" (stoker/program/options.h fills it). The session logs them at
  // its start, and every problem naming such a flag names its origin too (NameOrigins).
  std::map<std::string, std::string> origins;
  // The flags given on the command line, in the environment or in a --config file, not left at
  // their defaults (stoker/program/options.h fills it): a setting given where it does nothing is
  // a problem (--save-every without --checkpoint-dir).
  std::set<std::string> given;
  // A program's settings beyond these that every rank must give alike (a trainer's model and
  // log), as (name, value): stoker/program/options.h fills them from its schema; the session
  // compares them with its own, as it starts.
  std::vector<std::pair<std::string, std::string>> program_shared;

  // Whether the run writes step folders: a checkpoint folder, and saves on a schedule or at
  // the end (then a stop signal's step is saved too).
  bool Saves() const { return !checkpoint_dir.empty() && (save_every > 0 || save_last); }

  // The Loader's layout: loader.layout, or "tp=T,cp=C,pp=P" of the three sizes when one of them
  // is above 1; empty for none (every rank a replica of its own).
  std::string Layout() const;

  // Every problem that shows without MPI and without reading the corpus, one line each, named
  // by flag: the Loader's (LoaderConfig::Problems), weights that do not parse, a missing --data
  // folder, --layout beside one of the three sizes, a size below 1, --steps 0, --resume,
  // --start-over or a given --save-every above 0 without
  // --checkpoint-dir, --resume and --start-over both, a
  // --result file that cannot be written (probed: a file is created beside it and removed).
  // Problems are named by flag, each followed by the origins of the flags it names.
  std::vector<std::string> Problems() const;

  // `problem` with " (ORIGIN)" after it for every flag of `origins` it names.
  std::string NameOrigins(std::string problem) const;
};

// What a trainer saves beside the loader in every step folder.
struct TrainerFiles {
  std::vector<std::string> names;  // relative to the step folder: "model.pt", ...; none: the
                                   // loader's state alone (`stoker run`)
  std::string tag = "train";       // the word before the session's log lines ("train: ...")
};

// Rank 0's part of a save: writes the trainer's files into the step folder (which exists).
using WriteTrainerFiles = std::function<void(const std::string& step_dir)>;

// Makes SIGUSR1 and SIGTERM ask the session to stop at the next step (on every rank together)
// instead of ending the process. Call first thing in main(): a signal that arrives while the
// ranks start then stops the run after its first step, with a checkpoint. A session with a
// ready file refuses to start without it (the ready file promises that a signal is taken).
void InstallStopHandlers();

// Collective: rank 0 finds every problem of `settings` and of `more()` (the trainer's own:
// a model shape, say; rank 0 alone calls it), logs them under "`program`: wrong settings" and
// every rank returns false; true when there are none.
bool CheckRunSettings(MPI_Comm world, const RunSettings& settings,
                      const std::function<std::vector<std::string>()>& more,
                      std::string_view program);

class RunSession {
 public:
  // Collective. Writes the ready file and prepares the resume (see above). Throws BusyError (a
  // checkpoint folder another run holds), ConfigError (a newest step of two saves, no stop
  // handlers with a ready file) or IoError on every rank together.
  RunSession(MPI_Comm world, RunSettings settings, TrainerFiles files);
  ~RunSession();
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  const RunSettings& settings() const;
  // The settings' LoaderConfig with the mixing set and resume_from the step folder to go on
  // from (empty: step 0).
  const LoaderConfig& loader_config() const;
  // The step folder resumed from (empty: a fresh start) and the world size that saved its
  // loader files (0 when fresh).
  const std::string& resumed_from() const;
  uint64_t saved_world() const;

  // Collective, once, with the Loader built from loader_config() and the trainer's state
  // loaded: a fresh start refuses (or with start_over deletes) step folders already in the
  // checkpoint folder; the piece trace opens.
  void Start(Loader& loader);

  // The loader's next batch, timed and traced; InternalError if the stream ended.
  Batch Next();
  // Next(), waiting at most `timeout` (Loader::TryNext): false when no batch was ready by then,
  // with nothing taken. For a caller that must react to signals while storage is slow.
  bool TryNext(std::chrono::milliseconds timeout, std::optional<Batch>* batch);
  // Whether the loop goes on: the last step is below settings().steps and no stop was agreed.
  bool Running() const;
  // This rank caught SIGUSR1 or SIGTERM (InstallStopHandlers). Not collective.
  bool StopRequested() const;
  // Collective: whether any rank's StopRequested() (one all-reduce of one integer). For a
  // trainer that has no all-reduce of its own to fold the flag into.
  bool StopTogether();
  // Collective, after each step's update: `stop` is the ranks' agreed stop. Saves when one is
  // due (every save_every steps, and at the stop, which ends the loop: Running() is then false).
  void EndStep(bool stop, const WriteTrainerFiles& write);
  // EndStep and Finish wait for the loader's writes (the previous save's before a save, the
  // last one's at a stop and at the end) in slices of `slice`, calling `between()` after each:
  // for a caller that must react to signals while storage is slow. An exception of `between()`
  // leaves the wait, and the call: a save left so has no loader file of this rank, so its step
  // folder is incomplete and a resume passes over it.
  void WaitForWritesInSlices(std::chrono::milliseconds slice, std::function<void()> between);
  // Collective, after the loop: saves the last step (save_last), waits for the saves, then
  // rank 0 prints the result line on stdout and writes it into result_file. `fields`: the
  // trainer's figures, a JSON object's text (its keys beside the session's: ranks, start_step,
  // end_step, stopped_early, resumed_from, saved_world, seconds, data_wait_share,
  // max_wait_seconds, max_save_wait_seconds (the longest a rank waited at a save for the others:
  // how far apart they reached it; saves are collective, so the ranks stay within one save
  // interval), startup_seconds; a field of the same name wins). Returns the line (every rank).
  std::string Finish(std::string_view fields, const WriteTrainerFiles& write);

  // Figures of this rank: seconds in the loop (from Start until Running() first said false)
  // and in Next().
  double seconds() const;
  double waiting() const;
  bool stopped_early() const;
  uint64_t start_step() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stoker

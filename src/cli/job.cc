// `stoker job`: the decisions of the job scripts (jobs/common.sh), made by the pure rules of
// src/job. This file: time-limit and requeue; job_launch.cc: settings and start; job_reshard.cc:
// reshard. The scripts keep only a shell's work: reading squeue, running the trainer and
// `scontrol requeue`, choosing their exit code. One process, without mpirun: refused under more
// than one rank.
//
//   time-limit --limit TEXT (--signal SPEC | --warning-seconds N)
//       the job's time limit (squeue -o %l) against the warning offset (job/slurm_time.h)
//   requeue --checkpoint-dir DIR --steps N --idle-requeues K --job-id ID [--require FILE]...
//           [--trainer-exit CODE]
//       whether the job requeues itself after SIGUSR1 (job/requeue.h). Finds the newest
//       complete step with the code `stoker steps --newest` runs (checkpoint_step.h:
//       NewestResumableStep), reads the record DIR/.stoker-requeues and writes it atomically
//       (or removes it when the job does not requeue).
//
// Output, on stdout: the decision as one word on the first line (time-limit: fits, too-short,
// unlimited, unknown; requeue: requeue, done, give-up), then the lines the script prints, one
// each. Exit 0 once decided, whatever the decision; 2 when it cannot decide (a wrong option, a
// --signal spec sbatch would refuse, under mpirun), the error on stderr. main.cc gives the
// errors of parsing this subcommand's options exit code 2 too.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/check.h"
#include "checkpoint/checkpoint_step.h"
#include "checkpoint/checkpoint_store.h"
#include "cli/commands.h"
#include "cli/job_commands.h"
#include "job/requeue.h"
#include "job/slurm_time.h"
#include "os/files.h"

namespace stoker::cli {

namespace {

struct TimeLimitOptions {
  std::string limit;                        // --limit: squeue's %l
  std::string signal;                       // --signal: a --signal spec
  std::optional<uint64_t> warning_seconds;  // --warning-seconds
};

struct RequeueOptions {
  std::string checkpoint_dir;
  uint64_t steps = 0;                       // --steps
  uint64_t idle_requeues = 0;               // --idle-requeues
  std::vector<std::string> required_files;  // --require
  std::string job_id;                       // --job-id
  int trainer_exit = 0;                     // --trainer-exit
};

struct JobOptions {
  CLI::App* time_limit = nullptr;
  CLI::App* requeue = nullptr;
  TimeLimitOptions limit;
  RequeueOptions requeue_options;
  std::vector<JobCommand> more;  // job_commands.h
};

void PrintDecision(std::string_view word, const std::vector<std::string>& lines) {
  std::string out = fmt::format("{}\n", word);
  for (const std::string& line : lines) out += line + "\n";
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
}

void TimeLimit(const TimeLimitOptions& options) {
  const job::TimeLimitCheck check =
      job::CheckTimeLimit(options.limit, options.signal, options.warning_seconds);
  PrintDecision(job::VerdictWord(check.verdict), {check.message});
}

// The newest complete step of `dir` (kNone also when no step folder is complete: the next run
// starts at step 0); kUnknown, the reason logged, when finding it failed (a folder that cannot be
// read): the job ends anyway, and the record counts such requeues as without progress.
job::NewestStep FindNewestStep(const std::string& dir, const std::vector<std::string>& required) {
  try {
    const std::optional<StepFolder> newest = NewestResumableStep(dir, required);
    if (!newest) return {job::NewestStep::Kind::kNone};
    return {job::NewestStep::Kind::kStep, newest->step, newest->path};
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return {job::NewestStep::Kind::kUnknown};
  }
}

// The record's text, or nullopt when there is none (or it cannot be read: `lines` says so).
std::optional<std::string> ReadRecord(const std::string& path, std::vector<std::string>* lines) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    return ReadFile(path);
  } catch (const Error& e) {
    lines->push_back(fmt::format("warning: cannot read the requeue record: {}", e.what()));
    return std::nullopt;
  }
}

// Writes (`text`) or removes (nullopt) the record. A record that cannot be written is returned
// as the reason; one that cannot be removed is a warning in `lines`.
std::string UpdateRecord(const std::string& path, const std::optional<std::string>& text,
                         std::vector<std::string>* lines) {
  if (text) {
    try {
      WriteFileAtomically(path, *text);
    } catch (const Error& e) {
      return fmt::format("cannot record the requeue in {}: {}", path, e.what());
    }
    return "";
  }
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (ec) lines->push_back(fmt::format("warning: cannot remove {}: {}", path, ec.message()));
  return "";
}

void Requeue(RequeueOptions options) {
  std::string& dir = options.checkpoint_dir;
  dir.erase(std::max<size_t>(dir.find_last_not_of('/') + 1, 1));  // "ck/" names "ck"
  const std::string path = fmt::format("{}/{}", dir, job::kRequeueRecordName);
  std::vector<std::string> lines;
  job::RequeueInputs inputs;
  inputs.newest = FindNewestStep(dir, options.required_files);
  inputs.steps = options.steps;
  inputs.record = ReadRecord(path, &lines);
  inputs.idle_requeues = options.idle_requeues;
  inputs.trainer_exit = options.trainer_exit;
  inputs.job_id = options.job_id;
  job::RequeueDecision decision = job::DecideRequeue(inputs);
  const std::string unrecorded = UpdateRecord(path, decision.record, &lines);
  if (!unrecorded.empty() && decision.action == job::RequeueAction::kRequeue) {
    // A job that cannot count its requeues in a row could requeue for ever (a full disk, where
    // the trainer cannot save either): it stops, with or without an IDLE_REQUEUES limit.
    decision.action = job::RequeueAction::kGiveUp;
    decision.messages = {fmt::format(
        "error: not requeueing job {}: {}; without the record the requeues in a row without a "
        "newer complete step cannot be counted",
        inputs.job_id, unrecorded)};
  }
  lines.insert(lines.end(), decision.messages.begin(), decision.messages.end());
  PrintDecision(job::ActionWord(decision.action), lines);
}

int RunJob(const JobOptions& options, const mpi::Comm& world) {
  try {
    STOKER_CHECK(world.size() == 1, ConfigError,
                 "stoker job runs in one process: not under mpirun ({} ranks)", world.size());
    if (options.time_limit->parsed()) TimeLimit(options.limit);
    if (options.requeue->parsed()) Requeue(options.requeue_options);
    for (const JobCommand& command : options.more) {
      if (command.app->parsed()) return command.run();
    }
    return 0;
  } catch (const std::exception& e) {
    if (world.rank() == 0) spdlog::error("{}", e.what());
    return 2;
  }
}

void AddTimeLimit(CLI::App* job, JobOptions* options) {
  TimeLimitOptions* o = &options->limit;
  CLI::App* sub = options->time_limit = job->add_subcommand(
      "time-limit", "Refuse a time limit at or below the warning offset of --signal");
  sub->footer(
      "A job whose time limit is at or below the offset would get Slurm's warning at once, every "
      "run, and requeue itself every few seconds for ever. Prints one of: fits, too-short (the "
      "job must not start), unlimited, unknown (a limit that is not a time, e.g. "
      "Partition_Limit: not checked); then the line to print.");
  sub->add_option("--limit", o->limit,
                  "The job's time limit as squeue -o %l prints it (or sbatch --time takes it): "
                  "MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, UNLIMITED, ...")
      ->required();
  CLI::Option* signal = sub->add_option(
      "--signal", o->signal,
      "The job's --signal spec, [{R|B}:]SIG[@TIME]: the warning comes TIME seconds before the "
      "limit (60 without @TIME)");
  sub->add_option("--warning-seconds", o->warning_seconds,
                  "The warning offset in seconds, instead of --signal")
      ->excludes(signal);
  sub->callback([o] {
    if (o->signal.empty() && !o->warning_seconds) {
      throw CLI::RequiredError("--signal or --warning-seconds");
    }
  });
}

void AddRequeue(CLI::App* job, JobOptions* options) {
  RequeueOptions* o = &options->requeue_options;
  CLI::App* sub = options->requeue =
      job->add_subcommand("requeue", "Decide whether the job requeues itself after SIGUSR1");
  sub->footer(
      "Requeue, unless the newest complete step (as stoker steps --newest finds it) reached "
      "--steps, or --idle-requeues requeues in a row already found no newer complete step "
      "(counted in CHECKPOINT_DIR/.stoker-requeues, \"STEP COUNT\": the newest step found and "
      "the requeues in a row that found no newer one, the first that found it included; written "
      "atomically, removed when the job does not requeue). Prints one of: requeue (then run "
      "scontrol requeue), done (no requeue), give-up (no requeue: the job ends with an error); "
      "then the lines to print. A trainer that did not stop cleanly (--trainer-exit) is "
      "requeued all the same. A record that cannot be written (a full disk) gives up: the "
      "requeues could not be counted, and the job could requeue for ever.");
  sub->add_option("--checkpoint-dir", o->checkpoint_dir, "The folder of step-<N> folders")
      ->required();
  sub->add_option("--steps", o->steps, "The run's last step: a newest step at or past it is done")
      ->required();
  sub->add_option("--idle-requeues", o->idle_requeues,
                  "Requeues in a row without a newer complete step after which the job gives "
                  "up; 0: no limit")
      ->required();
  sub->add_option("--job-id", o->job_id, "The job's id (SLURM_JOB_ID), for the messages")
      ->required();
  sub->add_option("--require", o->required_files,
                  "A file the trainer saves in each step folder, as for stoker steps (repeat it, "
                  "or separate names with commas)")
      ->delimiter(',');
  sub->add_option("--trainer-exit", o->trainer_exit,
                  "The exit code of the trainer's launcher after the signal")
      ->capture_default_str();
}

}  // namespace

Command SetupJob(CLI::App& app) {
  auto options = std::make_shared<JobOptions>();
  CLI::App* job = app.add_subcommand(
      "job",
      "The decisions of the job scripts (jobs/): their settings, the start, the time limit, the "
      "requeue, the reshard.\n"
      "jobs/common.sh asks these instead of deciding in shell; each runs in one process, "
      "without mpirun or Slurm. time-limit and requeue print the decision as one word on their "
      "first line, then the lines the script prints, and exit 0 once decided; each exits 2 when "
      "it cannot decide or the job must not go on (the error on stderr). See jobs/README.md.");
  job->require_subcommand(1);
  AddTimeLimit(job, options.get());
  AddRequeue(job, options.get());
  options->more = {AddJobSettings(job), AddJobStart(job), AddJobReshard(job)};
  return {job, [options](const mpi::Comm& world) { return RunJob(*options, world); }};
}

}  // namespace stoker::cli

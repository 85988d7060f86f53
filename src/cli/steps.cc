// `stoker steps CHECKPOINT_DIR [--require FILE]... [--newest | --step N]`: the step folders of a
// --checkpoint-dir and whether each is complete, decided by the same code as a resume
// (checkpoint/checkpoint_store.h: every rank file of one world size, and the trainer's required
// files). The job scripts call it to find where a job goes on instead of checking folders
// themselves.
//
// Output, on stdout from rank 0:
//   (default)  a table: step, world size, "complete" or why not, path; one row per step folder
//   --newest   the newest complete step as one line STEP<TAB>WORLD<TAB>PATH, newer incomplete
//              ones logged as passed over; nothing when the folder holds no step folder (a run
//              starts at step 0); refused (exit 1) when it holds step folders and none is
//              complete, as a resume refuses
//   --step N   the same line for step-<N>, refused naming what is missing when it is not
//              complete
//   --interrupted [--keep K] [--remove]
//              the step folders a resume set aside (checkpoint/interrupted_steps.h), newest
//              first, with their sizes; --remove deletes all but the newest K (default 3),
//              holding the folder's lock (checkpoint/checkpoint_lock.h) so that no run is using
//              it at the time
// Names, and the rank files of the newest complete steps down to the one a resume goes on from,
// read as the resume reads them (checkpoint_step.h); the corpus record of each complete step is
// read and its checksum checked, so that one a resume could not use is seen here (rank 0 alone).
#include <spdlog/spdlog.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/text_table.h"
#include "checkpoint/checkpoint_lock.h"
#include "checkpoint/checkpoint_step.h"
#include "checkpoint/checkpoint_store.h"
#include "checkpoint/corpus_record_file.h"
#include "checkpoint/interrupted_steps.h"
#include "cli/commands.h"
#include "stoker/program/memory.h"

namespace stoker::cli {

namespace {

struct StepsOptions {
  std::string checkpoint_dir;
  std::vector<std::string> required_files;  // --require
  bool newest = false;                      // --newest
  std::optional<uint64_t> step;             // --step
  bool interrupted = false;                 // --interrupted
  uint64_t keep = kInterruptedStepsKept;    // --keep
  bool remove = false;                      // --remove
};

// Why the corpus record of a complete step cannot be used (corpus_record_file.h), or "".
std::string RecordProblem(const StepFolder& folder) {
  return folder.complete() ? CheckCorpusRecord(folder.path, "").problem : "";
}

// The line of --newest and --step; a corpus record that cannot be used is logged (stderr).
std::string StepLine(const StepFolder& folder) {
  if (const std::string record = RecordProblem(folder); !record.empty()) {
    spdlog::warn("step {}: its corpus record cannot be used: {}", folder.path, record);
  }
  return fmt::format("{}\t{}\t{}\n", folder.step, folder.world.value_or(0), folder.path);
}

std::string StepsTable(const std::vector<StepFolder>& steps) {
  std::vector<std::vector<std::string>> rows = {{"step", "world", "status", "path"}};
  for (const StepFolder& s : steps) {
    std::string status = s.complete() ? "complete" : fmt::format("{}", fmt::join(s.problems, "; "));
    if (const std::string record = RecordProblem(s); !record.empty()) {
      status += "; its corpus record cannot be used: " + record;
    }
    rows.push_back(
        {fmt::format("{}", s.step), s.world ? fmt::format("{}", *s.world) : "-", status, s.path});
  }
  return Tabulate(rows, {2, 3});
}

std::string UtcTime(int64_t unix_seconds) {
  const auto time = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  gmtime_r(&time, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &utc);
  return text;
}

// --interrupted: the set-aside folders, newest first; with --remove (rank 0 holding the lock),
// all but the newest `keep` are deleted.
std::string Interrupted(const StepsOptions& options) {
  const std::vector<InterruptedStep> steps = ListInterruptedSteps(options.checkpoint_dir);
  if (steps.empty())
    return fmt::format("{} holds no interrupted step folder\n", options.checkpoint_dir);
  std::vector<std::vector<std::string>> rows = {
      {"step", "size", "written (UTC)", "status", "path"}};
  uint64_t removed = 0, removed_bytes = 0, removable = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const InterruptedStep& s = steps[i];
    std::string fate = i < options.keep ? "kept" : "removable";
    if (i >= options.keep && options.remove) {
      RemoveInterruptedStep(s);
      fate = "removed";
      ++removed;
      removed_bytes += s.bytes;
    } else if (i >= options.keep) {
      ++removable;
    }
    rows.push_back({fmt::format("{}", s.step), FormatBytes(static_cast<double>(s.bytes)),
                    UtcTime(s.written_ns / 1'000'000'000), fate, s.path});
  }
  std::string out = Tabulate(rows, {2, 3, 4});
  if (removed > 0) {
    out += fmt::format("removed {} folders ({}), kept the newest {}\n", removed,
                       FormatBytes(static_cast<double>(removed_bytes)), options.keep);
  } else if (removable > 0) {
    out += fmt::format("{} beyond the newest {}: --remove deletes them\n", removable, options.keep);
  }
  return out;
}

std::string Describe(const StepsOptions& options) {
  if (options.interrupted) return Interrupted(options);
  const std::string& dir = options.checkpoint_dir;
  if (options.newest) {
    const std::optional<StepFolder> newest = NewestResumableStep(dir, options.required_files);
    return newest ? StepLine(*newest) : "";
  }
  if (options.step) return StepLine(CompleteStep(dir, *options.step, options.required_files));
  std::error_code ec;
  STOKER_CHECK(std::filesystem::is_directory(dir, ec), ConfigError, "no checkpoint folder {}", dir);
  const std::vector<StepFolder> steps =
      ListStepFoldersAsResumeSeesThem(dir, options.required_files);
  return steps.empty() ? fmt::format("{} holds no step folder\n", dir) : StepsTable(steps);
}

int RunSteps(StepsOptions options, const mpi::Comm& world) {
  while (options.checkpoint_dir.size() > 1 && options.checkpoint_dir.ends_with('/')) {
    options.checkpoint_dir.pop_back();
  }
  if (options.remove) LockCheckpointFolder(world, options.checkpoint_dir);
  std::string out;
  mpi::FailTogether(world, [&] {
    if (world.rank() == 0) out = Describe(options);
  });
  if (world.rank() == 0) {
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

Command SetupSteps(CLI::App& app) {
  auto options = std::make_shared<StepsOptions>();
  CLI::App* sub = app.add_subcommand(
      "steps",
      "List the checkpoint steps of a folder, or find the newest complete one.\n"
      "A step folder (CHECKPOINT_DIR/step-<N>) is complete when loader/ holds the rank file of "
      "every rank of one world size and every --require file is there: the rule a resume "
      "applies (FindResumeStep), so a job script asks this instead of checking "
      "folders itself. The newest complete steps, down to the one a resume goes on from, have "
      "their rank files read as a resume reads them: one with a damaged file or files of two "
      "saves is named, not complete. Each complete step's corpus record (loader/corpus.table) "
      "is checked too, and one that cannot be used named. Prints a table of every step "
      "folder; --newest or --step N print one line, STEP<TAB>WORLD<TAB>PATH, for scripts. "
      "--interrupted lists (and with --remove deletes) the step folders resumes set aside. See "
      "docs/checkpoint.md.");
  sub->add_option("checkpoint_dir", options->checkpoint_dir,
                  "The folder of step-<N> folders (a --checkpoint-dir)")
      ->required();
  sub->add_option("--require", options->required_files,
                  "A file a trainer saves in each step folder (relative to it, e.g. model.pt): "
                  "a step without it is not complete. Repeat it, or separate names with commas")
      ->delimiter(',');
  CLI::Option* newest = sub->add_flag(
      "--newest", options->newest,
      "Print only the newest complete step, passing over (and logging) newer incomplete ones; "
      "nothing when there is no step folder; refused when no step folder is complete");
  CLI::Option* step =
      sub->add_option("--step", options->step,
                      "Print only step N, refused (naming what is missing) unless it is complete")
          ->excludes(newest);
  CLI::Option* interrupted =
      sub->add_flag("--interrupted", options->interrupted,
                    "List instead the step folders a resume set aside (step-<N>.interrupted, "
                    "from saves a killed run left part-written), newest first, with their sizes")
          ->excludes(newest)
          ->excludes(step);
  sub->add_option("--keep", options->keep,
                  "With --interrupted: the newest K set-aside folders are kept, the others "
                  "marked removable")
      ->capture_default_str()
      ->needs(interrupted);
  sub->add_flag("--remove", options->remove,
                "With --interrupted: delete the set-aside folders beyond the newest --keep. "
                "Takes the folder's lock first: refused while a run saves into the folder")
      ->needs(interrupted);
  return {sub, [options](const mpi::Comm& world) { return RunSteps(*options, world); }};
}

}  // namespace stoker::cli

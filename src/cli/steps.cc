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
// Names only, never the files' content: `stoker inspect` reads and checks that.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/text_table.h"
#include "checkpoint/checkpoint_store.h"
#include "cli/commands.h"

namespace stoker::cli {

namespace {

struct StepsOptions {
  std::string checkpoint_dir;
  std::vector<std::string> required_files;  // --require
  bool newest = false;                      // --newest
  std::optional<uint64_t> step;             // --step
};

std::string StepLine(const StepFolder& folder) {
  return fmt::format("{}\t{}\t{}\n", folder.step, folder.world.value_or(0), folder.path);
}

std::string StepsTable(const std::vector<StepFolder>& steps) {
  std::vector<std::vector<std::string>> rows = {{"step", "world", "status", "path"}};
  for (const StepFolder& s : steps) {
    rows.push_back({fmt::format("{}", s.step), s.world ? fmt::format("{}", *s.world) : "-",
                    s.complete() ? "complete" : fmt::format("{}", fmt::join(s.problems, "; ")),
                    s.path});
  }
  return Tabulate(rows, {2, 3});
}

std::string Describe(const StepsOptions& options) {
  const std::string& dir = options.checkpoint_dir;
  if (options.newest) {
    const std::optional<StepFolder> newest = NewestCompleteStep(dir, options.required_files);
    return newest ? StepLine(*newest) : "";
  }
  if (options.step) {
    const std::string path = dir + "/" + StepFolderName(*options.step);
    std::error_code ec;
    STOKER_CHECK(std::filesystem::is_directory(path, ec), ConfigError, "no step folder {}", path);
    const StepFolder folder = DescribeStepFolder(path, options.required_files);
    STOKER_CHECK(folder.complete(), ConfigError, "{} is not a complete step: {}", path,
                 fmt::join(folder.problems, "; "));
    return StepLine(folder);
  }
  std::error_code ec;
  STOKER_CHECK(std::filesystem::is_directory(dir, ec), ConfigError, "no checkpoint folder {}", dir);
  const std::vector<StepFolder> steps = ListStepFolders(dir, options.required_files);
  return steps.empty() ? fmt::format("{} holds no step folder\n", dir) : StepsTable(steps);
}

int RunSteps(StepsOptions options, const mpi::Comm& world) {
  while (options.checkpoint_dir.size() > 1 && options.checkpoint_dir.ends_with('/')) {
    options.checkpoint_dir.pop_back();
  }
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
      "applies (Loader::FindResumeStep), so a job script asks this instead of checking "
      "folders itself. Reads names only, never the files' content (stoker inspect checks "
      "that). Prints a table of every step folder; --newest or --step N print one line, "
      "STEP<TAB>WORLD<TAB>PATH, for scripts. See docs/checkpoint.md.");
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
  sub->add_option("--step", options->step,
                  "Print only step N, refused (naming what is missing) unless it is complete")
      ->excludes(newest);
  return {sub, [options](const mpi::Comm& world) { return RunSteps(*options, world); }};
}

}  // namespace stoker::cli

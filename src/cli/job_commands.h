// The subcommands of `stoker job` beside time-limit and requeue (job.cc): what a job script asks
// before its launch (job_launch.cc: settings, start) and the reshard job (job_reshard.cc). Each
// reads the job's settings from the environment (job/job_settings.h) and runs in one process.
// `run` returns the exit code, or throws (job.cc logs the error and exits 2).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "job/job_settings.h"

namespace stoker::cli {

struct JobCommand {
  CLI::App* app;
  std::function<int()> run;
};

JobCommand AddJobSettings(CLI::App* job);
JobCommand AddJobStart(CLI::App* job);
JobCommand AddJobReshard(CLI::App* job);

// The environment's `name`, nullopt when unset.
std::optional<std::string> Environment(std::string_view name);

// The job's settings from the environment (job/job_settings.h); ConfigError naming every wrong
// one. `launch`: where the job runs, for the checks that depend on it (NP, LAUNCHER).
job::JobSettings ReadJobSettings(job::Launch launch);

}  // namespace stoker::cli

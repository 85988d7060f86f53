// The subcommands of the `stoker` program. Each lives in its own file and offers
// SetupX(app): it adds the subcommand to `app`, binds its flags to an options struct, and returns
// the function that runs it. Runners are called on every rank with the world communicator and
// return the process exit code, the same on every rank.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "mpi/comm.h"

namespace stoker::cli {

using Runner = std::function<int(const mpi::Comm& world)>;

struct Command {
  CLI::App* app;
  Runner run;
};

Command SetupSynth(CLI::App& app);
Command SetupPack(CLI::App& app);
Command SetupImport(CLI::App& app);
Command SetupManifest(CLI::App& app);
Command SetupVerify(CLI::App& app);
Command SetupInspect(CLI::App& app);
Command SetupRun(CLI::App& app);
Command SetupReshard(CLI::App& app);
Command SetupSteps(CLI::App& app);
Command SetupAudit(CLI::App& app);
Command SetupJob(CLI::App& app);
Command SetupSettings(CLI::App& app);

}  // namespace stoker::cli

// stoker: the command-line program. Runs alone or under mpirun; every subcommand is collective
// over MPI_COMM_WORLD, but `stoker job`, which runs alone only (cli/job.cc).
//
// Errors: an error all ranks raised together (collective) is printed once by rank 0 and every
// rank exits 1 after finalizing MPI in order. Any other error is printed by the rank that saw it,
// which then ends the job with MPI_Abort so that no other rank waits for it for ever.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "mpi/comm.h"
#include "stoker/error.h"
#include "stoker/program/log.h"
#include "stoker/program/options.h"

namespace {

// `stoker --help` lists each subcommand by the first line of its description, its summary; the
// rest is for `stoker SUB --help`, which prints it all (subcommands keep CLI11's formatter).
class SummaryFormatter : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    const std::string& description = sub->get_description();
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             description.substr(0, description.find('\n')), column_width_);
    return out.str();
  }
};

}  // namespace

int main(int argc, char** argv) {
  stoker::mpi::Session session(&argc, &argv);
  int exit_code = 0;
  {
    stoker::mpi::Comm world(MPI_COMM_WORLD);
    CLI::App app{
        "stoker: an MPI data loader for LLM pre-training on HDF5 token shards.\n"
        "Every subcommand runs alone or under mpirun; under mpirun the ranks share the work."};
    app.require_subcommand(1);
    bool verbose = false, quiet = false;
    app.add_flag("-v,--verbose", verbose, "Log debug messages");
    app.add_flag("-q,--quiet", quiet, "Log warnings and errors only");
    std::vector<stoker::cli::Command> commands = {
        stoker::cli::SetupSynth(app),  stoker::cli::SetupPack(app),
        stoker::cli::SetupImport(app), stoker::cli::SetupManifest(app),
        stoker::cli::SetupVerify(app), stoker::cli::SetupInspect(app),
        stoker::cli::SetupRun(app),    stoker::cli::SetupReshard(app),
        stoker::cli::SetupSteps(app),  stoker::cli::SetupAudit(app),
        stoker::cli::SetupJob(app),    stoker::cli::SetupSettings(app)};
    app.formatter(std::make_shared<SummaryFormatter>());
    app.footer("stoker SUBCOMMAND --help explains a subcommand and its options.");
    stoker::program::CheckOptionValues(&app);
    const std::string empty =
        stoker::program::EmptyValueProblem(std::vector<std::string>(argv + 1, argv + argc));
    if (!empty.empty()) {
      if (world.rank() == 0) std::fprintf(stderr, "stoker: %s\n", empty.c_str());
      return 2;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // Every rank parsed the same arguments and failed the same way; one prints. A wrong
      // option is a settings error: exit 2 for every subcommand, as for the trainers (CLI11's
      // own codes, 104 for "--steps 12abc" and so on, are not), 0 after --help.
      const int code = world.rank() == 0 ? app.exit(e) : e.get_exit_code();
      return code == 0 ? 0 : 2;
    }
    stoker::program::InitLogging(world.rank(), verbose ? spdlog::level::debug
                                               : quiet ? spdlog::level::warn
                                                       : spdlog::level::info);
    for (auto& command : commands) {
      if (command.app->parsed())
        exit_code = stoker::mpi::RunProgram(world, [&] { return command.run(world); });
    }
    std::fflush(stdout);
  }
  return exit_code;
}

// stoker-train: the example data-parallel trainer (train/trainer.h). Its settings come from the
// schema of stoker/program/settings.h: the command line, then the environment (what the job
// scripts pass); runs under mpirun or srun, one process per rank.
//
// --check parses and checks the settings in one process without MPI and exits (0, or 2 naming
// each wrong setting): what jobs/ runs before it launches anything.
//
// Errors: an error all ranks raised together is printed once by rank 0 and every rank exits 1;
// any other error is printed by the rank that saw it, which then ends the job with MPI_Abort
// (stoker/collective.h). A --result file that cannot be written: exit 2, before training.
//
// Built on stoker's public headers only (include/stoker/), as a trainer of one's own would be.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/program/log.h"
#include "stoker/program/options.h"
#include "stoker/program/run_program.h"
#include "train/trainer.h"

namespace {

using stoker::train::TrainOptions;

// --check: the settings are parsed and checked (OptionProblems) by this one process, without
// MPI, and nothing else is done: exit 0 when they are right, 2 naming each wrong one; on stdout
// the settings that have a variable, as NAME=VALUE. What a job script runs before it launches
// the ranks.
int CheckSettings(const TrainOptions& options, const stoker::program::CommandLine& line) {
  const std::vector<std::string> problems = stoker::train::OptionProblems(options);
  for (const std::string& problem : problems)
    std::fprintf(stderr, "stoker-train: %s\n", problem.c_str());
  for (const std::string& variable : line.VariableLines()) std::printf("%s\n", variable.c_str());
  return problems.empty() ? 0 : 2;
}

bool HasFlag(int argc, char** argv, std::string_view flag) {
  for (int i = 1; i < argc; ++i) {
    if (flag == argv[i]) return true;
  }
  return false;
}

// MPI for the process: initialized here (one thread calls MPI), finalized at the end.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession() { MPI_Finalize(); }
};

}  // namespace

int main(int argc, char** argv) {
  stoker::InstallStopHandlers();
  // Seen before the parse, which comes after MPI's start-up (only rank 0 prints parse errors).
  const bool check = HasFlag(argc, argv, "--check");
  std::optional<MpiSession> session;
  if (!check) session.emplace(&argc, &argv);
  int rank = 0;
  if (!check) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int exit_code = 0;
  {
    CLI::App app{
        "stoker-train: an example data-parallel trainer on the stoker loader. A tiny causal "
        "language model trains on the CPU; every rank reads its own batches from the loader and "
        "gradients are averaged with MPI every step. SIGUSR1 or SIGTERM (a preemption warning) "
        "makes every rank stop at the same step and save it. Rank 0 logs progress and ends with "
        "one JSON line on stdout (losses, tokens/s, data-wait share). Each rank computes with "
        "OMP_NUM_THREADS threads (set it; 1 when ranks fill the cores). docs/operations.md "
        "explains checkpoints, resuming and rescaling. A setting not on the command line comes "
        "from its environment variable when that is set (`stoker settings` lists them).",
        "stoker-train"};
    TrainOptions options = stoker::program::DefaultSettings(stoker::program::Program::kTrainer);
    stoker::program::CommandLine line(&app, stoker::program::Program::kTrainer, &options);
    stoker::program::CheckOptionValues(&app);
    if (const auto code = stoker::program::ParseCommandLine(
            &app, &line, std::vector<std::string>(argv + 1, argv + argc), rank == 0)) {
      return *code;
    }
    if (options.check != check) {  // "--check=true": MPI has started, as for a run
      if (rank == 0) std::fprintf(stderr, "stoker-train: give --check alone, without a value\n");
      return 2;
    }
    if (check) return CheckSettings(options, line);
    stoker::program::InitLogging(rank);
    exit_code = stoker::program::RunProgram(
        MPI_COMM_WORLD, [&] { return stoker::train::RunTraining(options, MPI_COMM_WORLD); });
    std::fflush(stdout);
  }
  return exit_code;
}

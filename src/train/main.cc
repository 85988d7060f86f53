// stoker-train: the example data-parallel trainer (train/trainer.h). Binds the command line into
// TrainOptions; runs under mpirun or srun, one process per rank.
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

#include "stoker/collective.h"
#include "stoker/loader_options.h"
#include "stoker/log.h"
#include "stoker/option_checks.h"
#include "train/trainer.h"

namespace {

using stoker::train::TrainOptions;

void BindData(CLI::App& app, TrainOptions& o) {
  stoker::LoaderConfig& c = o.run.loader;
  c.seq_len = 128;
  c.batch_size = 16;
  app.add_option("--data", c.data, "Corpus folder (docs/format.md), e.g. one made by stoker pack")
      ->required();
  stoker::AddMixingOptions(&app, &o.run.weights, &o.run.weights_schedule);
  app.add_option("--seq-len", c.seq_len, "Tokens per training sequence (the model's context)")
      ->capture_default_str();
  app.add_option("--batch-size", c.batch_size, "Sequences per step on each rank")
      ->capture_default_str();
  app.add_option("--seed", c.seed, "Seed of the data order and of the model's initial weights")
      ->capture_default_str();
  app.add_option("--logical-shards", c.logical_shards,
                 "Units of the data order that ranks own; any rank count up to it works")
      ->capture_default_str();
  stoker::AddReadingOptions(&app, &c);
}

void BindModel(CLI::App& app, TrainOptions& o) {
  app.add_option("--vocab", o.vocab,
                 "Vocabulary size (token ids must be below it); 0: the corpus's vocab_size "
                 "attribute (258 for stoker pack's byte tokenizer)")
      ->capture_default_str();
  app.add_option("--dim", o.dim, "Model width")->capture_default_str();
  app.add_option("--layers", o.layers, "Transformer blocks")->capture_default_str();
  app.add_option("--heads", o.heads, "Attention heads (must divide --dim)")->capture_default_str();
  app.add_option("--lr", o.lr, "AdamW's learning rate after warm-up")->capture_default_str();
  app.add_option("--warmup", o.warmup, "Steps of linear learning-rate warm-up from step 0")
      ->capture_default_str();
  app.add_option("--clip", o.clip, "Clip the gradient norm to this (0: no clipping)")
      ->capture_default_str();
  app.add_flag("--doc-mask", o.doc_mask,
               "Attend only within each document (block-diagonal causal attention from the "
               "loader's segment_ids) and count positions from each document's first token "
               "(its position_ids, restarting at each row too); off: plain causal attention "
               "over the whole row, positions 0 to --seq-len - 1");
}

void BindRun(CLI::App& app, TrainOptions& o) {
  app.add_option("--steps", o.run.steps, "Stop after this global step")->capture_default_str();
  CLI::Option* dir = app.add_option(
      "--checkpoint-dir", o.run.checkpoint_dir,
      "Folder of checkpoints (shared storage on a cluster): step-<N>/ holds model.pt, "
      "optimizer.pt, trainer.json and loader/ (one file per rank). A checkpoint is also saved at "
      "the last step and when a signal stops the run");
  app.add_option("--save-every", o.run.save_every,
                 "Save a checkpoint every K global steps (0: none on a schedule; the last step "
                 "and the step a stop signal ends the run at are saved all the same)")
      ->capture_default_str()
      ->needs(dir);
  CLI::Option* resume =
      app.add_flag("--resume", o.run.resume,
                   "Go on from the newest complete step under --checkpoint-dir, on any number of "
                   "ranks (the loader rescales its state); none yet: start at step 0. Safe to "
                   "pass always")
          ->needs(dir);
  app.add_flag("--start-over", o.run.start_over,
               "Start at step 0 although --checkpoint-dir holds step folders of an earlier run: "
               "they are deleted first. Without it (and without --resume) such a run is refused, "
               "never overwriting them")
      ->needs(dir)
      ->excludes(resume);
  app.add_option("--trace", o.run.trace_dir,
                 "Write what every rank was handed to DIR/from-<step>/rank-<r>-of-<W>.trace, for "
                 "`stoker audit DIR` (no token lost or repeated across resumes)");
  app.add_option("--log-every", o.log_every,
                 "Log step, loss, tokens/s and data-wait share every K steps (0: never)")
      ->capture_default_str();
  app.add_option("--result", o.run.result_file,
                 "Also write the JSON object of the summary line into FILE (rank 0, atomically: "
                 "temporary file and rename), also when a signal stopped the run early "
                 "(stopped_early, end_step): for "
                 "the job's own records (RESULT_FILE of jobs/). A FILE that cannot be written "
                 "is an error before training (exit 2)");
  app.add_option("--ready-file", o.run.ready_file,
                 "Rank 0 creates FILE once every rank has started and can take SIGUSR1 or "
                 "SIGTERM: a job script holds a stop signal until then (jobs/common.sh), since "
                 "one sent earlier can reach a rank before it could catch it, or no rank at all");
}

// --check: the settings are parsed and checked (OptionProblems) by this one process, without
// MPI, and nothing else is done: exit 0 when they are right, 2 naming each wrong one. What a job
// script runs before it launches the ranks.
int CheckSettings(const TrainOptions& options) {
  const std::vector<std::string> problems = stoker::train::OptionProblems(options);
  for (const std::string& problem : problems)
    std::fprintf(stderr, "stoker-train: %s\n", problem.c_str());
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
        "explains checkpoints, resuming and rescaling."};
    TrainOptions options;
    BindData(app, options);
    BindModel(app, options);
    BindRun(app, options);
    bool check_flag = false;  // `check` above: seen before MPI starts
    app.add_flag("--check", check_flag,
                 "Check the settings and exit, starting nothing (no MPI: run it without mpirun): "
                 "0 when they are right, 2 naming each wrong one. Job scripts run it first");
    stoker::CheckOptionValues(&app);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (rank != 0) return e.get_exit_code();
      const int code = app.exit(e);
      return check && code != 0 ? 2 : code;
    }
    if (check_flag != check) {  // "--check=true": MPI has started, as for a run
      if (rank == 0) std::fprintf(stderr, "stoker-train: give --check alone, without a value\n");
      return 2;
    }
    if (check) return CheckSettings(options);
    stoker::InitLogging(rank);
    exit_code = stoker::RunProgram(
        MPI_COMM_WORLD, [&] { return stoker::train::RunTraining(options, MPI_COMM_WORLD); });
    std::fflush(stdout);
  }
  return exit_code;
}

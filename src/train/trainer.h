// stoker-train: an example data-parallel trainer on stoker's Loader. Every rank holds the same
// tiny causal language model (train/model.h), trains it on its own batches and averages the
// gradients with one MPI all-reduce per step, so the replicas stay equal. It saves model,
// optimizer and loader state into one step folder every K steps, resumes from the newest
// complete one on any number of ranks, and stops cleanly on SIGUSR1 or SIGTERM (a preemption
// warning): all ranks stop at the same step, save it and exit 0.
//
// RunTraining is collective over `world` (the caller's communicator, used as it is); errors are
// thrown on every rank together where the ranks can agree on them (configuration, checkpoints),
// otherwise on the rank that saw them. This header does not need libtorch.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/loader.h"

namespace stoker::train {

struct TrainOptions {
  LoaderConfig loader;         // --data, --seq-len, --batch-size, --seed, ...
  std::string weights;         // --weights, parsed at run time (LoaderConfig::SetMixing)
  std::string weights_schedule;  // --weights-schedule, the same
  uint64_t steps = 300;        // stop after this global step
  int64_t vocab = 0;           // 0: the corpus's vocab_size attribute
  int64_t dim = 128;           // model width
  int64_t layers = 2;          // transformer blocks
  int64_t heads = 4;           // attention heads
  double lr = 3e-3;            // AdamW's peak learning rate
  uint64_t warmup = 20;        // steps of linear warm-up to lr
  double clip = 1.0;           // gradient norm clipping (0: none)
  bool doc_mask = false;       // attend within documents only, positions from each document's
                               // start (the loader's segment_ids and position_ids)
  std::string checkpoint_dir;  // step folders go here
  uint64_t save_every = 50;    // save every K global steps (0: only when stopped by a signal)
  bool resume = false;         // go on from the newest complete step, if any
  bool start_over = false;     // start at step 0, deleting step folders already there
  std::string trace_dir;       // piece traces for `stoker audit` (empty: none)
  uint64_t log_every = 10;     // log a line every K steps on rank 0
  std::string result_file;     // rank 0 also writes the summary JSON here (empty: stdout only)
  std::string ready_file;      // rank 0 creates it once every rank can take a stop signal
};

// Every problem of `options` that shows without MPI and without reading the corpus, one line
// each: sizes of 0, weights that do not parse, a model shape that cannot be built, a missing
// --data folder, --resume without --checkpoint-dir, a --result file that cannot be written.
// `stoker-train --check` prints them; every run checks them first, on every rank together.
std::vector<std::string> OptionProblems(const TrainOptions& options);

// Makes SIGUSR1 and SIGTERM ask RunTraining to stop at the next step (on every rank together)
// instead of ending the process. Call first thing in main(): a signal that arrives while the
// ranks are still starting up then stops the run after its first step, with a checkpoint.
void InstallStopHandlers();

// Trains until options.steps or a stop signal; rank 0 prints one JSON line of figures on stdout
// and writes the same object into options.result_file, if set, atomically. Returns the process
// exit code: 0, or 2 on every rank when OptionProblems finds any (checked first). Rank 0 creates
// options.ready_file, if set, right after that check: every rank has then started and installed
// its stop handlers (InstallStopHandlers runs before MPI starts), so a signal sent from then on
// stops the run with a checkpoint; one sent before may find a rank that cannot take it yet.
int RunTraining(const TrainOptions& options, MPI_Comm world);

}  // namespace stoker::train

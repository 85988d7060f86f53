// stoker-train: an example data-parallel trainer on stoker's Loader and RunSession. Every rank
// holds the same tiny causal language model (train/model.h), trains it on its own batches and
// averages the gradients with one MPI all-reduce per step, so the replicas stay equal; a second,
// small one carries the loss and the session's stop flag over the job. Under a parallel layout
// (--layout, or --tensor-parallel, --context-parallel, --pipeline-parallel) every rank still runs
// the whole model (the example splits no layer): the ranks of a replica take the same batches,
// each context-parallel rank its part of every row, and the gradients are averaged over the
// ranks of one tp and pp coordinate (dp x cp) only; at every log line the ranks of a replica
// check that they took the same batches, and at the end every rank that it holds the same
// weights. The session saves model, optimizer and loader
// state into one step folder every K steps, resumes from the newest complete one on any number
// of ranks, and stops cleanly on SIGUSR1 or SIGTERM (a preemption warning): all ranks stop at the
// same step, save it and exit 0.
//
// RunTraining is collective over `world` (the caller's communicator, used as it is); errors are
// thrown on every rank together where the ranks can agree on them (configuration, checkpoints),
// otherwise on the rank that saw them. This header does not need libtorch.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/program/settings.h"
#include "stoker/run_session.h"

namespace stoker::train {

// The settings of stoker-train: the run's and the model's (stoker/program/settings.h).
using TrainOptions = program::ProgramSettings;

// Every problem of `options` that shows without MPI and without reading the corpus, one line
// each: the run's (RunSettings::Problems), then the model's: a learning rate or clipping out of
// range (TrainerSettings::Problems), a shape that cannot be built. `stoker-train --check` prints
// them; every run checks them first, on every rank together.
std::vector<std::string> OptionProblems(const TrainOptions& options);

// Trains until options.run.steps or a stop signal (stoker/run_session.h holds the job's
// contract: the ready file, resume, saves, the stop, the result line). Returns the process exit
// code: 0, or 2 on every rank when OptionProblems finds any (checked first). Call
// stoker::InstallStopHandlers first thing in main().
int RunTraining(const TrainOptions& options, MPI_Comm world);

}  // namespace stoker::train

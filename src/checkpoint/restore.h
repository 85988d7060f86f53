// Resuming the loader from a checkpoint step folder. Both calls are collective over `comm` and
// fail on every rank together with one message.
//
// Same world size: every rank reads its own file; the stream goes on bit for bit as if the run
// had never stopped. Another world size: the new ranks read the old files between them (old
// file k by new rank k mod W'), split each into parts for the new owners of its logical shards
// (state/rescale.h), and one all-to-all exchange delivers them; every new rank assembles its
// state. `stoker reshard` does the same offline, with the same functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_step.h"
#include "mpi/comm.h"
#include "packing/row_planner.h"
#include "state/checkpoint_codec.h"
#include "state/loader_state.h"
#include "stoker/corpus.h"

namespace stoker {

// Collective: NewestResumableStep (checkpoint_step.h) on rank 0, its path known to every rank;
// its refusal raised on every rank together.
std::optional<std::string> FindNewestCompleteStep(
    const mpi::Comm& comm, const std::string& checkpoint_dir,
    const std::vector<std::string>& required_files = {});

// Collective. Takes the folder's lock for this process's life (checkpoint_lock.h: refused when
// another run holds it), then renames every step folder under `checkpoint_dir` newer than
// `resume_dir` (nullopt: all) to step-<N>.interrupted (or .interrupted-<K> when taken), logging
// each: a killed run leaves such folders with some ranks' files, and the saves of the run that
// resumes must never complete them with files of its own.
void SetAsideStepsAfter(const mpi::Comm& comm, const std::string& checkpoint_dir,
                        const std::optional<std::string>& resume_dir);

// Collective. For a run that starts at step 0 and will save into `checkpoint_dir`: takes the
// folder's lock as SetAsideStepsAfter does; step folders already there hold another run's
// checkpoints, which this run's saves would overwrite or mix with. Refused (ConfigError on every
// rank, naming them and the newest) unless `start_over`, when rank 0 deletes them (each logged)
// before the run saves anything.
void PrepareFreshStart(const mpi::Comm& comm, const std::string& checkpoint_dir, bool start_over);

struct RestoredState {
  RankState state;
  MixSchedule saved_schedule;  // the weight schedule this rank's file was saved with (rank
                               // file 0's after a rescale)
};

// This rank's state from the step folder `step_dir`. Refuses (ConfigError) a checkpoint saved with
// another corpus, seed, logical-shard count, seq_len or EOS/BOS than `now`, saying what differs
// (of another corpus: which files of `corpus`, the table `now` was made from, differ);
// a missing or corrupt rank file, or one of another save than rank file 0 (another run identity
// or step: ReadStepRank), is an error naming it.
RestoredState RestoreRankState(const mpi::Comm& comm, const std::string& step_dir,
                               const OrderIdentity& now, const CorpusTable& corpus);

// Checks that a restored state fits the corpus it resumes on: every cursor inside its logical
// shard's slice, the interleaving inside the rank's shards, unfinished documents listed once and
// cut. DataError naming `step_dir` otherwise (a file written by another tool or edited by hand).
void CheckStateFits(const RankState& state, const PlannerConfig& planner,
                    const std::string& step_dir);

// Checks the identity `step` was saved with against `now`: ConfigError listing the differences,
// naming rank file 0, and when the corpus fingerprints differ also which files of `corpus` differ
// from the step's corpus record (corpus_record_file.h), which it reads only then.
void CheckIdentity(const CheckpointStep& step, const OrderIdentity& now, const CorpusTable& corpus);

}  // namespace stoker

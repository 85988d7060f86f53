// The groups of a Loader's parallel layout (stoker/layout.h) for this rank: its data-parallel
// group, whose ranks own the order, the state and the checkpoint files as the ranks of a job
// without a layout do; and its replica group, whose members hold the same batches.
#pragma once

#include <optional>
#include <string>

#include "mpi/comm.h"
#include "stoker/loader.h"

namespace stoker {

struct ReplicaGroups {
  mpi::Comm data_parallel;
  std::optional<mpi::Comm> replica;  // none without a layout: every rank a replica of its own
  int context_size = 1;              // context parallelism (Batch::inputs): cp, and this rank's
  int context_rank = 0;              // cp coordinate
  int pipeline_size = 1;             // pipeline parallelism: pp, and this rank's pp coordinate
  int pipeline_rank = 0;
  // What a save records (RankCheckpoint::layout): the layout with dp ("tp=2,cp=1,dp=4,pp=1"),
  // "dp=D,replica=R" with the communicators given, empty without a layout.
  std::string layout;
};

// Collective over `comm`, the job's ranks (all of them, layout or not: the ranks first agree on
// whether there is one): the groups of config.layout, or of the communicators
// config.data_parallel_comm and config.replica_comm; without either, `comm` is the data-parallel
// group. ConfigError on every rank together: a layout that does not parse or fit the job,
// communicators that are not the groups of a layout of `comm` (sizes whose product is not the
// job's, members of a replica at other data-parallel ranks, members of a data-parallel group at
// other places in their replicas), ranks that give another layout, replica feed or, within a
// replica, batch size; a seq_len that 2 x cp does not divide.
ReplicaGroups ResolveReplicaGroups(const mpi::Comm& comm, const LoaderConfig& config);

}  // namespace stoker

#include "loader/replica_groups.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "base/unique_handle.h"
#include "loader/loader_setup.h"
#include "mpi/agreement.h"
#include "stoker/error.h"
#include "stoker/layout.h"

namespace stoker {

namespace {

bool HasLayout(const LoaderConfig& config) {
  return !config.layout.empty() || config.data_parallel_comm != MPI_COMM_NULL ||
         config.replica_comm != MPI_COMM_NULL;
}

// Whether every rank of `comm` gives the same `value` (both collectives on every rank).
bool SameEverywhere(const mpi::Comm& comm, uint64_t value) {
  const uint64_t most = comm.Max(value);
  const uint64_t least = UINT64_MAX - comm.Max(UINT64_MAX - value);
  return most == least;
}

// The given communicators' problem, or "". Collective over `comm`, `dp` and `replica`: every
// check runs on every rank before any answer, so that no rank leaves a collective the others
// are in.
std::string CommsProblem(const mpi::Comm& comm, const mpi::Comm& dp, const mpi::Comm& replica) {
  const uint64_t product = static_cast<uint64_t>(dp.size()) * replica.size();
  const bool fits = SameEverywhere(comm, product) && product == static_cast<uint64_t>(comm.size());
  const bool replica_at_one_dp = SameEverywhere(replica, static_cast<uint64_t>(dp.rank()));
  const bool dp_at_one_place = SameEverywhere(dp, static_cast<uint64_t>(replica.rank()));
  if (!fits) {
    return fmt::format(
        "data_parallel_comm of {} ranks and replica_comm of {} on rank {} do not make a job of {} "
        "ranks: the data-parallel size times the replica size must be the number of ranks, on "
        "every rank",
        dp.size(), replica.size(), comm.rank(), comm.size());
  }
  if (!replica_at_one_dp) {
    return "the members of a replica_comm are at other ranks of their data_parallel_comm: a "
           "replica's ranks must all be data-parallel rank d of their groups";
  }
  if (!dp_at_one_place) {
    return "the members of a data_parallel_comm are at other ranks of their replica_comm: a "
           "data-parallel group's ranks must all hold one place in their replicas";
  }
  return "";
}

// The size of `group` and this rank's place in it (none given: a group of one).
void SizeAndRank(MPI_Comm group, int* size, int* rank) {
  if (group == MPI_COMM_NULL) return;
  const mpi::Comm comm(group);
  *size = comm.size();
  *rank = comm.rank();
}

}  // namespace

ReplicaGroups ResolveReplicaGroups(const mpi::Comm& comm, const LoaderConfig& config) {
  // First, whether there is a layout at all: ranks that went on otherwise would meet in other
  // collectives.
  const bool given = config.data_parallel_comm != MPI_COMM_NULL;
  mpi::RequireAgreement(comm,
                        {{"layout", given                   ? "the communicators given"
                                    : config.layout.empty() ? "none"
                                                            : config.layout},
                         {"replica_feed", std::string(ReplicaFeedName(config.replica_feed))},
                         {"fields_by_stage", config.fields_by_stage ? "on" : "off"}},
                        "the ranks describe the parallel layout otherwise");
  if (!HasLayout(config)) return {.data_parallel = mpi::Comm(comm.get()), .replica = {}};
  mpi::FailTogether(comm, [&] {
    if (auto problems = config.Problems(); !problems.empty()) RefuseConfiguration(problems);
  });
  ReplicaGroups groups{.data_parallel = mpi::Comm(comm.get()), .replica = {}};
  if (given) {
    groups.data_parallel = mpi::Comm(config.data_parallel_comm);
    groups.replica.emplace(config.replica_comm);
    const std::string problem = CommsProblem(comm, groups.data_parallel, *groups.replica);
    mpi::FailTogether(comm, [&] {
      if (!problem.empty()) throw ConfigError(problem);
    });
    SizeAndRank(config.context_parallel_comm, &groups.context_size, &groups.context_rank);
    SizeAndRank(config.pipeline_parallel_comm, &groups.pipeline_size, &groups.pipeline_rank);
    groups.layout =
        fmt::format("dp={},replica={}", groups.data_parallel.size(), groups.replica->size());
  } else {
    ParallelLayout layout;
    mpi::FailTogether(comm, [&] { layout = ParseLayout(config.layout).Fit(comm.size()); });
    groups.context_size = layout.Size("cp");
    groups.context_rank = layout.Coordinate(comm.rank(), "cp");
    groups.pipeline_size = layout.Size("pp");
    groups.pipeline_rank = layout.Coordinate(comm.rank(), "pp");
    groups.layout = layout.Text();
    LayoutComms made = MakeLayoutComms(comm.get(), layout);
    const UniqueHandle<mpi::CommTraits> data_parallel(made.data_parallel), replica(made.replica),
        gradient(made.gradient);
    groups.data_parallel = mpi::Comm(made.data_parallel);
    groups.replica.emplace(made.replica);
  }
  mpi::FailTogether(comm, [&] {
    const uint64_t parts = 2 * static_cast<uint64_t>(groups.context_size);
    if (groups.context_size == 1 || config.seq_len % parts == 0) return;
    throw ConfigError(fmt::format(
        "seq_len {} is not a multiple of 2 x cp = {}: context parallelism cuts each row into 2 x "
        "cp chunks of equal length (cp {})",
        config.seq_len, parts, groups.context_size));
  });
  // A replica's members hold one batch: in every feed they must ask for the same rows.
  mpi::RequireAgreement(*groups.replica, {{"batch_size", std::to_string(config.batch_size)}},
                        "the ranks of one replica ask for batches of other sizes");
  return groups;
}

}  // namespace stoker

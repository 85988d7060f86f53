// Parallel layouts: which ranks of a job hold one model replica, and which consume other data.
//
// A job that splits its model trains with several kinds of parallelism at once: tensor (tp) and
// context (cp) parallel groups split each layer or each sequence, pipeline (pp) stages split the
// layers, and only the data-parallel (dp) dimension consumes different data. The ranks of one
// replica (same dp coordinate, every tp, cp and pp coordinate) must see the same batches: its
// replica group. A layout names the sizes and the order in which ranks are numbered, the first
// name varying fastest, as Megatron numbers them: "tp=2,cp=2,dp=4,pp=2" puts ranks 0 and 1 in
// one tensor-parallel group, ranks 0, 1, 2, 3 in one context-parallel x tensor-parallel block,
// and so on. A name left out has size 1. The Loader takes a layout (LoaderConfig::layout) or the
// two communicators a trainer already has (LoaderConfig::data_parallel_comm, replica_comm);
// MakeLayoutComms makes them for a trainer that has none.
#pragma once

#include <mpi.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

struct ParallelLayout {
  struct Dimension {
    std::string name;  // "tp", "cp", "dp" or "pp"
    int size = 1;
  };
  // Every dimension, in rank order: the first varies fastest. Names not given have size 1 and
  // come last, in Megatron's order (tp, cp, pp), but dp: left out, it is the rest of the job
  // (Fit), placed where Megatron places it, just before pp.
  std::vector<Dimension> dimensions;

  // This layout over a job of `world` ranks: with dp given, itself when its sizes' product is
  // `world`; with dp left out, dp = world / (tp x cp x pp). ConfigError naming the sizes and the
  // job when the layout does not fit.
  ParallelLayout Fit(long long world) const;

  bool Holds(const std::string& name) const;
  int Size(const std::string& name) const;  // 1 for a name the layout does not hold
  long long World() const;                  // the product of the sizes
  // This rank's coordinate along `name` (0 <= c < Size(name)).
  int Coordinate(int rank, const std::string& name) const;
  // The ranks of a replica group and of a data-parallel group are numbered as follows: a
  // replica's ranks by their rank in the job; a data-parallel group's by their dp coordinate.
  // The replica of `rank` (its dp coordinate) and its rank within the replica group.
  int Replica(int rank) const { return Coordinate(rank, "dp"); }
  int RankInReplica(int rank) const;
  // Which group of ranks that average their gradients holds `rank`: the ranks of the same tp
  // and pp coordinates (dp x cp ranks, as Megatron's data-parallel group with context
  // parallelism: each cp rank's gradients are of its part of the rows).
  int GradientGroup(int rank) const;
  std::string Text() const;  // "tp=2,cp=2,dp=4,pp=2"

 private:
  int PositionWithout(int rank, std::initializer_list<std::string_view> skipped) const;
};

// Parses "tp=2,cp=2,dp=4,pp=2": names tp, cp, dp and pp, each at most once, each a size of at
// least 1; the order given is the rank order; dp may be left out ("tp=2,pp=2": the rest of the
// job, ParallelLayout::Fit). ConfigError naming what is wrong: an unknown name
// (and the names known), a size that is not a whole number of at least 1, a name given twice.
ParallelLayout ParseLayout(const std::string& text);

// The communicators of a layout, for this rank: its data-parallel group (the ranks of the same
// tp, cp and pp coordinates, numbered by dp coordinate), its replica group (the ranks of its
// dp coordinate, numbered as in `comm`) and its gradient group (ParallelLayout::GradientGroup,
// numbered as in `comm`), over which a trainer averages its gradients. The caller frees all
// three (MPI_Comm_free).
struct LayoutComms {
  MPI_Comm data_parallel = MPI_COMM_NULL;
  MPI_Comm replica = MPI_COMM_NULL;
  MPI_Comm gradient = MPI_COMM_NULL;
};

// Collective over `comm`. ConfigError on every rank when the layout does not fit the world
// (ParallelLayout::Fit), naming the sizes and the world.
LayoutComms MakeLayoutComms(MPI_Comm comm, const ParallelLayout& layout);

// How the members of a replica group get their batches (LoaderConfig::replica_feed).
enum class ReplicaFeed {
  // The replica's first rank reads; the others receive its batches by broadcast (one read per
  // replica), started a step ahead so that it overlaps with the trainer's step.
  kBroadcast,
  // Every member reads the same batches itself: no communication, more reads.
  kReadEach,
};
std::string_view ReplicaFeedName(ReplicaFeed feed);  // "broadcast", "read"
// The feed of a name ReplicaFeedName gives; ConfigError naming the choices for any other text.
ReplicaFeed ParseReplicaFeed(std::string_view text);

}  // namespace stoker

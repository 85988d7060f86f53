// What the Loader works out, collectively, before it streams: the corpus table, the weight
// schedule,
// EOS/BOS, and the planner's configuration. Every rank computes the same from the same table, so
// every check fails on every rank together.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mpi/comm.h"
#include "packing/row_planner.h"
#include "shard/array_locations.h"
#include "stoker/loader.h"

namespace stoker {

struct LoaderSetup {
  CorpusTable table;
  std::vector<ArrayLocations> arrays;  // where each shard's arrays lie, in table.shards order
  int64_t eos_id = 0;
  std::optional<int64_t> bos_id;
  PlannerConfig planner;  // with the weight schedule (ResolveSchedule)
};

// Throws the ConfigError of a configuration the corpus cannot serve, marked collective (every rank
// finds the same problems in the same table): "bad loader configuration:" and a line a problem.
[[noreturn]] void RefuseConfiguration(const std::vector<std::string>& problems);

// Collective over `comm`. Settles what `*config` leaves to the job (io_depth 0 becomes this rank's
// share of its node's depth, RankIoDepth). Throws ConfigError or DataError on every rank together.
// No dataset is dealt yet: the caller deals them (DealDatasets, loader/unit_sizes.h) once it knows
// which (DealtByRule for a run from step 0, else the state's).
LoaderSetup SetUpLoader(const mpi::Comm& comm, LoaderConfig* config);

// The datasets a run from step 0 deals to the ranks (PlannerDataset::sizes): those with tokens
// and at most config.deal_max_docs documents. Pure: the same on every rank.
std::vector<bool> DealtByRule(const LoaderConfig& config, const CorpusTable& table);

// Walked datasets of positive weight at some step of which some rank of `p.world` would own no
// document, one line each: such a rank could not follow the weights (and a rank with nothing at
// all to read could not stream). A dealt dataset gives every rank its part.
std::vector<std::string> RanksWithoutDocuments(const PlannerConfig& p);

// The reads in flight of a rank among `ranks_on_node` (LoaderConfig::io_depth): as set, or for 0
// kNodeIoDepth divided among them, at least kMinRankIoDepth. With ranks_on_node 1, the most
// any rank gets: what is checked before the node is known.
uint32_t RankIoDepth(const LoaderConfig& config, uint64_t ranks_on_node);

// How many batches the reading thread reads at once beyond the finished ones: as many as
// read_ahead_bytes hold in int64 tokens, at least 1, at most the reads in flight (RankIoDepth for
// one rank a node: every batch has a read at least, so more could not have more in flight).
uint64_t BatchesBeingRead(const LoaderConfig& config);

// Whether token reads bypass the page cache (LoaderConfig::direct_io): kAuto when the corpus's
// files hold more bytes than this process may use (stoker/program/memory.h), so that the page
// cache could not keep them.
bool ReadsDirect(const LoaderConfig& config, const CorpusTable& table);

// The weight schedule `config` asks for (weight_schedule, else `weights` from step 0 on) over
// `table`'s datasets, each entry normalized; throws ConfigError (collective: same table, same
// answer everywhere) naming unknown datasets or impossible weights.
MixSchedule ResolveSchedule(const LoaderConfig& config, const CorpusTable& table);

// One entry's weights over `table`'s datasets, normalized: `weights` (not named: 0), or by
// tokens when empty. Problems (unknown datasets, weight on a dataset without tokens, nothing to
// read) go to `problems`, prefixed with `what` ("--weights", "--weights-schedule entry 2").
std::vector<double> ResolveWeights(const std::map<std::string, double>& weights,
                                   const CorpusTable& table, const std::string& what,
                                   std::vector<std::string>* problems);

// `planner`'s schedule with `weights` (ResolveWeights) from `step` on (MixSchedule::SetFrom);
// ConfigError (on this rank) for weights the corpus cannot follow, as set-up refuses them.
MixSchedule ScheduleSettingWeights(const PlannerConfig& planner, const CorpusTable& table,
                                   uint64_t step, const std::map<std::string, double>& weights);

}  // namespace stoker

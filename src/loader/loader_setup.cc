#include "loader/loader_setup.h"

#include <fmt/format.h>

#include <set>

#include "base/check.h"
#include "io/discovery.h"

namespace stoker {

namespace {

[[noreturn]] void Refuse(const std::vector<std::string>& problems) {
  std::string message = "bad loader configuration:";
  for (const auto& p : problems) message += "\n  " + p;
  throw ConfigError(message, /*collective=*/true);
}

// The value every shard that has attribute `name` agrees on; a ConfigError when they disagree.
std::optional<int64_t> CorpusAttribute(const CorpusTable& table, const char* name,
                                       std::optional<int64_t> ShardInfo::*field) {
  std::optional<int64_t> value;
  const ShardInfo* first = nullptr;
  for (const ShardInfo& shard : table.shards) {
    if (!(shard.*field)) continue;
    if (!value) {
      value = shard.*field;
      first = &shard;
    } else if (*value != *(shard.*field)) {
      Refuse({fmt::format("the corpus's shards disagree on {}: {} has {}, {} has {}; choose one "
                          "with --{}",
                          name, first->path, *value, shard.path, *(shard.*field),
                          std::string(name) == "eos_id" ? "eos-id" : "bos-id")});
    }
  }
  return value;
}

// Datasets of positive weight of which some rank would own no document: refused, because that
// rank could not follow the weights (and a rank with nothing at all to read could not stream).
void CheckEveryRankHasDocuments(const LoaderSetup& setup, uint64_t world) {
  const PlannerConfig& p = setup.planner;
  std::vector<std::string> problems;
  for (const PlannerDataset& d : p.datasets) {
    if (d.weight <= 0) continue;
    for (uint64_t rank = 0; rank < world; ++rank) {
      const IndexRange shards = OwnedLogicalShards(p.logical_shards, world, rank);
      const uint64_t first = SplitRange(d.docs, p.logical_shards, shards.begin).begin;
      const uint64_t end = SplitRange(d.docs, p.logical_shards, shards.end - 1).end;
      if (end > first) continue;
      problems.push_back(fmt::format(
          "dataset {} has {} documents, too few for {} ranks: rank {} would get none of them "
          "(give it weight 0, or use fewer ranks)",
          d.name, d.docs, world, rank));
      break;
    }
  }
  if (!problems.empty()) Refuse(problems);
}

}  // namespace

std::vector<std::string> LoaderConfig::Problems() const {
  std::vector<std::string> problems;
  if (data.empty()) problems.push_back("no corpus folder (--data)");
  if (seq_len == 0) problems.push_back("--seq-len must be at least 1");
  if (batch_size == 0) problems.push_back("--batch-size must be at least 1");
  constexpr uint64_t kMaxBatchTokens = uint64_t{1} << 31;  // 16 GiB of int64 per batch
  if (seq_len >= kMaxBatchTokens || (batch_size > 0 && seq_len > 0 &&
                                     batch_size > kMaxBatchTokens / (seq_len + 1))) {
    problems.push_back(fmt::format("--batch-size {} x (--seq-len {} + 1) tokens per batch is "
                                   "above the limit of 2^31",
                                   batch_size, seq_len));
  }
  if (logical_shards == 0) problems.push_back("--logical-shards must be at least 1");
  if (prefetch == 0) problems.push_back("--prefetch must be at least 1");
  if (max_open_files == 0) problems.push_back("max_open_files must be at least 1");
  if (eos_id && *eos_id < 0) problems.push_back(fmt::format("--eos-id {} is negative", *eos_id));
  if (bos_id && *bos_id < 0) problems.push_back(fmt::format("--bos-id {} is negative", *bos_id));
  for (const auto& [name, weight] : weights) {
    if (!(weight >= 0)) problems.push_back(fmt::format("weight of {} is {}; weights must be >= 0",
                                                       name, weight));
  }
  return problems;
}

std::vector<double> ResolveWeights(const LoaderConfig& config, const CorpusTable& table) {
  std::vector<std::string> problems;
  std::set<std::string> names;
  for (const auto& d : table.datasets) names.insert(d.name);
  for (const auto& [name, weight] : config.weights) {
    if (!names.count(name)) {
      problems.push_back(fmt::format("--weights names dataset {}, which corpus {} does not have "
                                     "(it has: {})",
                                     name, table.root, fmt::join(names, ", ")));
    }
  }
  std::vector<double> weights;
  double total = 0;
  for (const auto& d : table.datasets) {
    double w = static_cast<double>(d.tokens);
    if (!config.weights.empty()) {
      const auto it = config.weights.find(d.name);
      w = it == config.weights.end() ? 0.0 : it->second;
    }
    if (w > 0 && d.tokens == 0) {
      problems.push_back(fmt::format("dataset {} has weight {} but no tokens", d.name, w));
    }
    weights.push_back(w);
    total += w;
  }
  if (problems.empty() && !(total > 0)) {
    problems.push_back("every dataset has weight 0 (or no tokens): nothing to read");
  }
  if (!problems.empty()) Refuse(problems);
  for (double& w : weights) w /= total;
  return weights;
}

LoaderSetup SetUpLoader(const mpi::Comm& comm, const LoaderConfig& config) {
  if (auto problems = config.Problems(); !problems.empty()) Refuse(problems);
  LoaderSetup setup;
  setup.table = DiscoverCorpus(comm, config.data);
  if (static_cast<uint64_t>(comm.size()) > config.logical_shards) {
    Refuse({config.resume_from.empty()
                ? fmt::format("{} ranks but only {} logical shards: every rank needs at least "
                              "one (raise --logical-shards)",
                              comm.size(), config.logical_shards)
                : fmt::format("{} ranks but only {} logical shards: checkpoint {} was saved with "
                              "{} logical shards, so resume it on at most {} ranks",
                              comm.size(), config.logical_shards, config.resume_from,
                              config.logical_shards, config.logical_shards)});
  }
  setup.weights = ResolveWeights(config, setup.table);
  setup.eos_id = config.eos_id.value_or(
      CorpusAttribute(setup.table, "eos_id", &ShardInfo::eos_id).value_or(0));
  setup.bos_id = config.bos_id;
  PlannerConfig& p = setup.planner;
  p.seed = config.seed;
  p.logical_shards = config.logical_shards;
  p.world = static_cast<uint64_t>(comm.size());
  p.rank = static_cast<uint64_t>(comm.rank());
  p.row_tokens = config.seq_len + 1;
  p.bos = setup.bos_id.has_value();
  for (size_t d = 0; d < setup.table.datasets.size(); ++d) {
    const DatasetInfo& info = setup.table.datasets[d];
    p.datasets.push_back({info.name, info.docs, setup.weights[d]});
  }
  CheckEveryRankHasDocuments(setup, p.world);
  return setup;
}

}  // namespace stoker
